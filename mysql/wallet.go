package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

var _ quan.WalletStore = (*Store)(nil)

// UpdateCoupons implements quan.WalletStore: the coupons are read FOR
// UPDATE, so two orders locking one coupon take turns and the second sees
// the first's lock.
func (s *Store) UpdateCoupons(ctx context.Context, user int64, ids []int64, fn func([]*quan.Coupon) error) ([]*quan.Coupon, error) {
	var out []*quan.Coupon
	err := s.db.inTx(ctx, func(tx *sql.Tx) error {
		cs, err := lockedCoupons(ctx, tx, `user_id = ? AND id IN (%s) ORDER BY id FOR UPDATE`, user, ids)
		if err != nil {
			return err
		}
		if len(cs) != len(slices.Compact(slices.Sorted(slices.Values(ids)))) {
			for _, id := range ids {
				if !slices.ContainsFunc(cs, func(c *quan.Coupon) bool { return c.ID == id }) {
					return quan.Errorf(quan.ENOTFOUND, "user %d holds no coupon %d", user, id)
				}
			}
		}
		before := make([]quan.Coupon, len(cs))
		for i, c := range cs {
			before[i] = *c
		}
		if err := fn(cs); err != nil {
			return err
		}
		for i, c := range cs {
			if c.Status == before[i].Status && c.OrderID == before[i].OrderID && c.LockedUntil.Equal(before[i].LockedUntil) {
				continue
			}
			if err := saveCoupon(ctx, tx, c); err != nil {
				return err
			}
		}
		out = cs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("update coupons of user %d: %w", user, err)
	}
	return out, nil
}

// lockedCoupons selects coupons by where, whose %s the ids fill.
func lockedCoupons(ctx context.Context, tx *sql.Tx, where string, user int64, ids []int64) ([]*quan.Coupon, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 1+len(ids))
	args = append(args, user)
	for _, id := range ids {
		args = append(args, id)
	}
	q := `SELECT ` + couponColumns + ` FROM coupons WHERE ` + fmt.Sprintf(where, "?"+strings.Repeat(", ?", len(ids)-1))
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("coupons of user %d: %w", user, err)
	}
	defer rows.Close()
	var cs []*quan.Coupon
	for rows.Next() {
		c, err := scanCoupon(rows)
		if err != nil {
			return nil, fmt.Errorf("coupons of user %d: %w", user, err)
		}
		cs = append(cs, c)
	}
	return cs, rows.Err()
}

func saveCoupon(ctx context.Context, tx *sql.Tx, c *quan.Coupon) error {
	var (
		order sql.NullString
		until sql.NullTime
	)
	if c.OrderID != "" {
		order = sql.NullString{String: c.OrderID, Valid: true}
	}
	if !c.LockedUntil.IsZero() {
		until = sql.NullTime{Time: utc(c.LockedUntil), Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE coupons SET status = ?, order_id = ?, locked_until = ?, updated_at = ? WHERE id = ?`,
		string(c.Status), order, until, utc(c.UpdatedAt), c.ID); err != nil {
		return fmt.Errorf("save coupon %d: %w", c.ID, translate(err))
	}
	return nil
}

// LapseCoupons implements quan.WalletStore: the due coupons are picked
// along the (status, valid_end) index FOR UPDATE SKIP LOCKED, so that
// several sweepers share the work, and changed by one UPDATE per kind.
func (s *Store) LapseCoupons(ctx context.Context, now time.Time, limit int) ([]*quan.Coupon, []quan.CouponStatus, error) {
	var (
		cs  []*quan.Coupon
		was []quan.CouponStatus
	)
	err := s.db.inTx(ctx, func(tx *sql.Tx) error {
		cs, was = nil, nil
		for _, q := range []struct {
			from  quan.CouponStatus
			where string
		}{
			{quan.CouponAvailable, `status = 'available' AND valid_end <= ? ORDER BY valid_end LIMIT ? FOR UPDATE SKIP LOCKED`},
			{quan.CouponLocked, `status = 'locked' AND locked_until <= ? LIMIT ? FOR UPDATE SKIP LOCKED`},
		} {
			left := limit - len(cs)
			if left <= 0 {
				break
			}
			rows, err := tx.QueryContext(ctx, `SELECT `+couponColumns+` FROM coupons WHERE `+q.where, utc(now), left)
			if err != nil {
				return fmt.Errorf("lapse %s coupons: %w", q.from, err)
			}
			var due []*quan.Coupon
			for rows.Next() {
				c, err := scanCoupon(rows)
				if err != nil {
					rows.Close()
					return fmt.Errorf("lapse %s coupons: %w", q.from, err)
				}
				due = append(due, c)
			}
			err = rows.Err()
			rows.Close()
			if err != nil {
				return fmt.Errorf("lapse %s coupons: %w", q.from, err)
			}
			for part := range slices.Chunk(due, claimBatch) {
				if err := lapse(ctx, tx, part, now); err != nil {
					return err
				}
			}
			for _, c := range due {
				cs, was = append(cs, c), append(was, q.from)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("lapse coupons: %w", err)
	}
	return cs, was, nil
}

// lapse applies Coupon.Lapse to cs and writes the new statuses with one
// UPDATE per status.
func lapse(ctx context.Context, tx *sql.Tx, cs []*quan.Coupon, now time.Time) error {
	by := map[quan.CouponStatus][]any{}
	for _, c := range cs {
		c.Lapse(now)
		by[c.Status] = append(by[c.Status], c.ID)
	}
	for status, ids := range by {
		args := append([]any{string(status), utc(now)}, ids...)
		if _, err := tx.ExecContext(ctx, `UPDATE coupons SET status = ?, order_id = NULL, locked_until = NULL, updated_at = ?
			WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...); err != nil {
			return fmt.Errorf("lapse %d coupons: %w", len(ids), translate(err))
		}
	}
	return nil
}
