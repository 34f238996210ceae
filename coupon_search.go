package quan

import (
	"context"
	"fmt"
	"time"
)

// CouponFilter selects coupons for a shop's staff (CouponSearcher). At
// least one of UserID, ID, TemplateID and TaskID is set: each is a range
// of an index, so a search never scans the coupons of a shop.
type CouponFilter struct {
	ShopNo     int64        // AnyShop (0) matches every shop
	UserID     int64        // 0 matches any
	ID         int64        // 0 matches any: the coupon of a code
	TemplateID int64        // 0 matches any
	TaskID     int64        // 0 matches any
	Status     CouponStatus // "" matches any; the status as stored
	// From and To, if not zero, bound when coupons were issued:
	// From ≤ CreatedAt < To.
	From, To time.Time
	// Before, if positive, matches coupons of lower ids only: the cursor
	// of a search paged newest first.
	Before int64
	Limit  int // 1 … MaxPageSize; 0 means DefaultPageSize
}

// Validate reports every invalid filter value at once, by the names the
// API gives them.
func (f CouponFilter) Validate() error {
	var v Validation
	if f.UserID == 0 && f.ID == 0 && f.TemplateID == 0 && f.TaskID == 0 {
		v.Add("userId", "give userId, code, templateId or taskId: a search is a range of one of them")
	}
	for _, n := range []struct {
		name string
		n    int64
	}{{"userId", f.UserID}, {"templateId", f.TemplateID}, {"taskId", f.TaskID}} {
		if n.n < 0 {
			v.Add(n.name, "must not be negative")
		}
	}
	switch f.Status {
	case "", CouponAvailable, CouponLocked, CouponUsed, CouponExpired, CouponRevoked:
	default:
		v.Add("status", fmt.Sprintf("%q is not a status: use available, locked, used, expired or revoked", f.Status))
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		v.Add("to", "must be after from")
	}
	if f.Before < 0 {
		v.Add("cursor", "must not be negative")
	}
	v.Page(0, f.Limit)
	return v.Err("invalid coupon search")
}

// CouponSearcher finds coupons for a shop's staff, and what happened to
// one.
type CouponSearcher interface {
	// SearchCoupons returns up to f.Limit coupons matching f, highest id
	// first, with their codes. Coupons archived are not found.
	SearchCoupons(ctx context.Context, f CouponFilter) ([]*Coupon, error)
	// ReviseCoupon loads coupon id of shop (AnyShop: any; ErrNotFound
	// otherwise) under a write lock and calls fn with it. If fn returns
	// nil the coupon is saved as UpdateCoupons saves it (its event, its
	// statistics, its budget) together with a, whose CouponID, ShopNo and
	// ID it sets, in one transaction; the coupon is returned. If fn fails
	// nothing is written and its error is returned.
	ReviseCoupon(ctx context.Context, shop, id int64, a *CouponAudit, fn func(*Coupon) error) (*Coupon, error)
	// CouponAudits returns the audit entries of coupon id of shop
	// (AnyShop: any), oldest first; none for a coupon without.
	CouponAudits(ctx context.Context, shop, id int64) ([]*CouponAudit, error)
	// CouponEvents returns the events the outbox still holds of coupon id
	// of shop (AnyShop: any), oldest first: its history, as long as the
	// retention of events keeps it.
	CouponEvents(ctx context.Context, shop, id int64) ([]*Event, error)
}

// Audit actions on coupons.
const (
	ActionRevokeCoupon = "revoke_coupon"
)

// CouponAudit records who changed one coupon by hand, when, and why.
type CouponAudit struct {
	ID       int64     `json:"id"`
	CouponID int64     `json:"couponId"`
	ShopNo   int64     `json:"shopNo"`
	Actor    string    `json:"actor"`
	Action   string    `json:"action"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// MaxReasonLen bounds the reason an operator gives for revoking or
// granting a coupon, in bytes.
const MaxReasonLen = 500
