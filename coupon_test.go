package quan

import (
	"errors"
	"testing"
	"time"
)

func TestCouponTransitions(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(72 * time.Hour)
	in, after := start.Add(time.Hour), end.Add(time.Hour)
	coupon := func(s CouponStatus) *Coupon {
		return &Coupon{ID: 1, Status: s, ValidStart: start, ValidEnd: end}
	}
	tests := []struct {
		name string
		from CouponStatus
		op   func(c *Coupon) error
		to   CouponStatus // "" means refused with ErrTransition, status unchanged
	}{
		{"LockAvailable", CouponAvailable, func(c *Coupon) error { return c.Lock("o1", in, in.Add(15*time.Minute)) }, CouponLocked},
		{"LockUsed", CouponUsed, func(c *Coupon) error { return c.Lock("o1", in, in.Add(15*time.Minute)) }, ""},
		{"LockBeforeStart", CouponAvailable, func(c *Coupon) error { return c.Lock("o1", start.Add(-time.Hour), start) }, ""},
		{"ReleaseLocked", CouponLocked, func(c *Coupon) error { return c.Release(in) }, CouponAvailable},
		{"ReleaseLockedAfterEnd", CouponLocked, func(c *Coupon) error { return c.Release(after) }, CouponExpired},
		{"ReleaseAvailable", CouponAvailable, func(c *Coupon) error { return c.Release(in) }, ""},
		{"RedeemLocked", CouponLocked, func(c *Coupon) error { return c.Redeem(in) }, CouponUsed},
		{"RedeemAvailable", CouponAvailable, func(c *Coupon) error { return c.Redeem(in) }, ""},
		{"RefundUsed", CouponUsed, func(c *Coupon) error { return c.Refund(in) }, CouponAvailable},
		{"RefundUsedAfterEnd", CouponUsed, func(c *Coupon) error { return c.Refund(after) }, CouponExpired},
		{"RefundExpired", CouponExpired, func(c *Coupon) error { return c.Refund(in) }, ""},
		{"ExpireAfterEnd", CouponAvailable, func(c *Coupon) error { return c.Expire(after) }, CouponExpired},
		{"ExpireTooEarly", CouponAvailable, func(c *Coupon) error { return c.Expire(in) }, ""},
		{"RevokeLocked", CouponLocked, func(c *Coupon) error { return c.Revoke(in) }, ""},
		{"RevokeUsed", CouponUsed, func(c *Coupon) error { return c.Revoke(in) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := coupon(tt.from)
			err := tt.op(c)
			if tt.to == "" {
				if !errors.Is(err, ErrTransition) || c.Status != tt.from {
					t.Fatalf("err %v, status %s", err, c.Status)
				}
				return
			}
			if err != nil || c.Status != tt.to {
				t.Fatalf("err %v, status %s, want %s", err, c.Status, tt.to)
			}
		})
	}
	t.Run("LockRunsOut", func(t *testing.T) {
		c := coupon(CouponAvailable)
		until := in.Add(15 * time.Minute)
		if err := c.Lock("o1", in, until); err != nil {
			t.Fatal(err)
		}
		if c.Lapse(until.Add(-time.Microsecond)) || c.Status != CouponLocked {
			t.Fatalf("a lock lapsed before its time: %s", c.Status)
		}
		if !c.Lapse(until) || c.Status != CouponAvailable || c.OrderID != "" || !c.LockedUntil.IsZero() {
			t.Fatalf("a lock that ran out: %+v, want available and free", c)
		}
		// Paying with a lock that ran out is refused.
		c.Lock("o2", in, until)
		if err := c.Redeem(until); !errors.Is(err, ErrTransition) || c.Status != CouponAvailable {
			t.Fatalf("redeem after the lock ran out: %v, %s", err, c.Status)
		}
		// A lock that runs out after the window closed leaves it expired.
		c.Lock("o3", in, end.Add(time.Hour))
		if !c.Lapse(end.Add(time.Hour)) || c.Status != CouponExpired {
			t.Fatalf("a lock that ran out after the window: %s, want expired", c.Status)
		}
	})
	t.Run("LockAfterEndExpires", func(t *testing.T) {
		c := coupon(CouponAvailable)
		if err := c.Lock("o1", after, after.Add(time.Minute)); !errors.Is(err, ErrTransition) || c.Status != CouponExpired {
			t.Fatalf("err %v, status %s", err, c.Status)
		}
	})
}
