package sqlrow

import (
	"database/sql"
	"slices"
	"time"

	"github.com/quanhq/quan"
)

// ScanCoupon reads a coupon from a row of the columns
//
//	id, template_id, shop_no, user_id, seq, status, valid_start, valid_end,
//	source, task_id, order_id, created_at, updated_at, locked_until,
//	lock_key, discount
//
// in that order; task_id, order_id, locked_until and lock_key may be
// NULL, which reads as 0, "" and the zero time. The coupon's Code is not
// stored but made from its id: Codes.Fill sets it.
func ScanCoupon(row Scanner) (*quan.Coupon, error) {
	var (
		c              quan.Coupon
		task           sql.NullInt64
		order, lockKey sql.NullString
	)
	if err := row.Scan(&c.ID, &c.TemplateID, &c.ShopNo, &c.UserID, &c.Seq, &c.Status,
		Time(&c.ValidStart), Time(&c.ValidEnd), &c.Source, &task, &order,
		Time(&c.CreatedAt), Time(&c.UpdatedAt), NullTime(&c.LockedUntil), &lockKey, &c.Discount); err != nil {
		return nil, err
	}
	c.TaskID, c.OrderID, c.LockKey = task.Int64, order.String, lockKey.String
	return &c, nil
}

// ScanHolding reads a row of the columns user_id, count.
func ScanHolding(row Scanner) (quan.Holding, error) {
	var h quan.Holding
	err := row.Scan(&h.UserID, &h.Count)
	return h, err
}

// ScanCodeBatch reads a code batch from a row of the columns id,
// template_id, shop_no, count, generated, status, created_by, created_at,
// updated_at, in that order.
func ScanCodeBatch(row Scanner) (*quan.CodeBatch, error) {
	var b quan.CodeBatch
	if err := row.Scan(&b.ID, &b.TemplateID, &b.ShopNo, &b.Count, &b.Generated, &b.Status, &b.CreatedBy,
		Time(&b.CreatedAt), Time(&b.UpdatedAt)); err != nil {
		return nil, err
	}
	return &b, nil
}

// ScanRedeemCode reads a code of batch from a row of the columns code,
// template_id, user_id, coupon_id, redeemed_at, in that order;
// redeemed_at may be NULL, a code not redeemed.
func ScanRedeemCode(row Scanner, batch int64) (quan.RedeemCode, error) {
	c := quan.RedeemCode{BatchID: batch}
	err := row.Scan(&c.Code, &c.TemplateID, &c.UserID, &c.CouponID, NullTime(&c.RedeemedAt))
	return c, err
}

// ScanClaim reads a claim from a row of the columns id, template_id,
// user_id, status, coupon_id, reason, at, decided_at, in that order.
func ScanClaim(row Scanner) (*quan.Claim, error) {
	var c quan.Claim
	if err := row.Scan(&c.ID, &c.TemplateID, &c.UserID, &c.Status, &c.CouponID, &c.Reason,
		Time(&c.At), Time(&c.DecidedAt)); err != nil {
		return nil, err
	}
	return &c, nil
}

// ClaimValues returns the values of c's columns id, template_id, user_id,
// status, coupon_id, reason, at, decided_at, in ScanClaim's order, for an
// INSERT. at is how the store writes an instant.
func ClaimValues[V any](c *quan.Claim, at func(time.Time) V) []any {
	return []any{c.ID, c.TemplateID, c.UserID, string(c.Status), c.CouponID, c.Reason, at(c.At), at(c.DecidedAt)}
}

// MissingCoupon returns the first of ids that none of cs has, and whether
// there is one: a coupon asked for by id that the rows read lack.
func MissingCoupon(ids []int64, cs []*quan.Coupon) (int64, bool) {
	for _, id := range ids {
		if !slices.ContainsFunc(cs, func(c *quan.Coupon) bool { return c.ID == id }) {
			return id, true
		}
	}
	return 0, false
}

// ScanHeld reads a coupon a user holds, as the claim that issued it, from
// a row of the columns claim_id, template_id, user_id, id, claimed_at,
// created_at, in that order. The claim has the coupon's TemplateID,
// UserID and CouponID; when claim_id is not NULL it also has its ID,
// status issued, At (claimed_at) and DecidedAt (the coupon's creation).
// A coupon that records no claim reads as a claim with ID "", zero At,
// and its creation as DecidedAt: Received tells when its user received
// it either way.
func ScanHeld(row Scanner) (*quan.Claim, error) {
	var (
		id sql.NullString
		c  quan.Claim
	)
	if err := row.Scan(&id, &c.TemplateID, &c.UserID, &c.CouponID, NullTime(&c.At), Time(&c.DecidedAt)); err != nil {
		return nil, err
	}
	if id.Valid {
		c.ID, c.Status = id.String, quan.ClaimIssued
	} else {
		c.At = time.Time{}
	}
	return &c, nil
}

// Received returns when the user received the coupon ScanHeld read: the
// claim's At for a claimed coupon (its coupon may be written later), its
// creation otherwise.
func Received(c *quan.Claim) time.Time {
	if !c.At.IsZero() {
		return c.At
	}
	return c.DecidedAt
}

// Periods is the Shanghai day of an instant, with the bounds of that day
// and of its week, for the counts of the period limits a holding carries
// (quan.Holding.Day, Week).
type Periods struct {
	Day                int64
	DayStart, DayEnd   time.Time // the day is [DayStart, DayEnd)
	WeekStart, WeekEnd time.Time // its week is [WeekStart, WeekEnd)
}

// PeriodsOf returns the day of at and the bounds of the day and its week.
func PeriodsOf(at time.Time) Periods {
	day := quan.ShanghaiDay(at)
	week := quan.WeekOfDay(day)
	return Periods{Day: day,
		DayStart: quan.ShanghaiDayStart(day), DayEnd: quan.ShanghaiDayStart(day + 1),
		WeekStart: quan.ShanghaiWeekStart(week), WeekEnd: quan.ShanghaiWeekStart(week + 1)}
}

// ScanHolding reads a holding of p's day from a row of the columns
// user_id, count, the count of the day, the count of the week.
func (p Periods) ScanHolding(row Scanner) (quan.Holding, error) {
	h := quan.Holding{PeriodDay: p.Day}
	err := row.Scan(&h.UserID, &h.Count, &h.Day, &h.Week)
	return h, err
}
