package sqlrow

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// SearchWhere returns the WHERE clause (without the word) and arguments
// of a coupon search, with at(t) the engine's value of a time. Each
// filter the caller gives is an equality on the leading column of an
// index (coupons_user_template_seq, the primary key,
// coupons_template_status_id, coupons_task_id), so the engine reads a
// range of one index, and id < ? with ORDER BY id DESC LIMIT n stops at
// the page's end: a search of a user or a code reads that user's few
// coupons however many millions the table holds. f must be valid
// (CouponFilter.Validate).
func SearchWhere(f quan.CouponFilter, at func(time.Time) any) (string, []any) {
	where, args := "1 = 1", []any{}
	add := func(cond string, arg any) {
		where += " AND " + cond
		args = append(args, arg)
	}
	if f.ID != 0 {
		add("id = ?", f.ID)
	}
	if f.UserID != 0 {
		add("user_id = ?", f.UserID)
	}
	if f.TemplateID != 0 {
		add("template_id = ?", f.TemplateID)
	}
	if f.TaskID != 0 {
		add("task_id = ?", f.TaskID)
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if f.ShopNo != quan.AnyShop {
		add("shop_no = ?", f.ShopNo)
	}
	if !f.From.IsZero() {
		add("created_at >= ?", at(f.From))
	}
	if !f.To.IsZero() {
		add("created_at < ?", at(f.To))
	}
	if f.Before > 0 {
		add("id < ?", f.Before)
	}
	return where, args
}

// SearchLimit is f's page size.
func SearchLimit(f quan.CouponFilter) int {
	if f.Limit <= 0 {
		return quan.DefaultPageSize
	}
	return min(f.Limit, quan.MaxPageSize)
}

// CouponAuditColumns are the columns ScanCouponAudit reads.
const CouponAuditColumns = `id, coupon_id, shop_no, actor, action, reason, at`

// ScanCouponAudit reads a row of CouponAuditColumns.
func ScanCouponAudit(row Scanner) (*quan.CouponAudit, error) {
	var a quan.CouponAudit
	if err := row.Scan(&a.ID, &a.CouponID, &a.ShopNo, &a.Actor, &a.Action, &a.Reason, Time(&a.At)); err != nil {
		return nil, err
	}
	return &a, nil
}

// InsertCouponAudit records a in tx at at (the engine's value of a.At),
// setting its ID.
func InsertCouponAudit(ctx context.Context, tx Execer, a *quan.CouponAudit, at any) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO coupon_audit (coupon_id, shop_no, actor, action, reason, at) VALUES (?, ?, ?, ?, ?, ?)`,
		a.CouponID, a.ShopNo, a.Actor, a.Action, a.Reason, at)
	if err != nil {
		return err
	}
	a.ID, err = res.LastInsertId()
	return err
}

// CouponHistorySQL is the query of the events of coupon id of shop
// (AnyShop: any), without its ORDER BY: a range of events_object.
func CouponHistorySQL(id, shop int64) (string, []any) {
	query := `SELECT ` + EventColumns + ` FROM ` + EventJoin + ` WHERE e.object_id = ? AND e.type LIKE 'coupon.%'`
	if shop == quan.AnyShop {
		return query, []any{id}
	}
	return query + ` AND e.shop_no = ?`, []any{id, shop}
}
