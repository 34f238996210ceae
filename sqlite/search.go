package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// SearchCoupons implements quan.CouponSearcher: a range of one index
// (sqlrow.SearchWhere), newest first.
func (s *Store) SearchCoupons(ctx context.Context, f quan.CouponFilter) (_ []*quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	where, args := sqlrow.SearchWhere(f, func(t time.Time) any { return micros(t) })
	args = append(args, sqlrow.SearchLimit(f))
	cs, err := s.queryCoupons(ctx, `SELECT `+couponColumns+` FROM coupons WHERE `+where+` ORDER BY id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("search coupons: %w", err)
	}
	return cs, nil
}

// CouponEvents implements quan.CouponSearcher along events_object.
func (s *Store) CouponEvents(ctx context.Context, shop, id int64) (_ []*quan.Event, err error) {
	defer s.db.unavailable(&err)
	query, args := sqlrow.CouponHistorySQL(id, shop)
	rs, err := sqlrow.Query(ctx, s.db.read, fmt.Sprintf("events of coupon %d", id), sqlrow.ScanEvent, query+` ORDER BY e.id`, args...)
	if err != nil {
		return nil, err
	}
	return sqlrow.EventData(ctx, s.db.read, s.db.codes, rs)
}

// CouponAudits implements quan.CouponSearcher.
func (s *Store) CouponAudits(ctx context.Context, shop, id int64) (_ []*quan.CouponAudit, err error) {
	defer s.db.unavailable(&err)
	query, args := sqlrow.OfShop(`SELECT `+sqlrow.CouponAuditColumns+` FROM coupon_audit WHERE coupon_id = ?`, id, shop)
	return sqlrow.Query(ctx, s.db.read, fmt.Sprintf("audit of coupon %d", id), sqlrow.ScanCouponAudit, query+` ORDER BY id`, args...)
}

// ReviseCoupon implements quan.CouponSearcher: the coupon's user read
// first, then UpdateCoupons' work and the audit entry in one transaction.
func (s *Store) ReviseCoupon(ctx context.Context, shop, id int64, a *quan.CouponAudit, fn func(*quan.Coupon) error) (_ *quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("revise coupon %d: %w", id, err)
	}
	defer tx.Rollback()
	var user, owner int64
	query, args := sqlrow.OfShop(`SELECT user_id, shop_no FROM coupons WHERE id = ?`, id, shop)
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&user, &owner); errors.Is(err, sql.ErrNoRows) {
		return nil, quan.Errorf(quan.ENOTFOUND, "no coupon %d", id)
	} else if err != nil {
		return nil, fmt.Errorf("revise coupon %d: %w", id, err)
	}
	cs, err := s.updateCoupons(ctx, tx, user, []int64{id}, func(cs []*quan.Coupon) error { return fn(cs[0]) })
	if err != nil {
		return nil, err
	}
	a.CouponID, a.ShopNo = id, owner
	if err := sqlrow.InsertCouponAudit(ctx, tx, a, micros(a.At)); err != nil {
		return nil, fmt.Errorf("revise coupon %d: audit: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("revise coupon %d: commit: %w", id, translate(err))
	}
	return cs[0], nil
}
