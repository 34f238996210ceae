package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// couponColumns is the column list of every coupon SELECT, in
// sqlrow.ScanCoupon's order.
const couponColumns = `id, template_id, shop_no, user_id, seq, status, valid_start, valid_end,
	source, task_id, order_id, created_at, updated_at, locked_until, lock_key, discount`

// CodeKey implements quan.CouponStore: the key Open read.
func (s *Store) CodeKey() *quan.CodeKey { return s.db.codes.Key }

// Coupon implements quan.CouponStore.
func (s *Store) Coupon(ctx context.Context, shop, id int64) (_ *quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	query, args := sqlrow.OfShop(`SELECT `+couponColumns+` FROM coupons WHERE id = ?`, id, shop)
	cs, err := s.queryCoupons(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("coupon %d: %w", id, err)
	}
	if len(cs) == 0 {
		return nil, quan.Errorf(quan.ENOTFOUND, "no coupon %d", id)
	}
	return cs[0], nil
}

// UserCoupons returns the coupons user holds of template (0: of every
// template), newest (highest id) first: a range of the (user, template,
// seq) index.
func (s *Store) UserCoupons(ctx context.Context, user, template int64) (_ []*quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	query := `SELECT ` + couponColumns + ` FROM coupons WHERE user_id = ?`
	args := []any{user}
	if template != 0 {
		query += ` AND template_id = ?`
		args = append(args, template)
	}
	cs, err := s.queryCoupons(ctx, query+` ORDER BY id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("coupons of user %d: %w", user, err)
	}
	return cs, nil
}

// UserCouponPage implements quan.CouponStore: the count is a range of the
// (user, template, seq) index, the page its rows sorted by id.
func (s *Store) UserCouponPage(ctx context.Context, user int64, offset, limit int) (_ []*quan.Coupon, _ int, err error) {
	defer s.db.unavailable(&err)
	var total int
	if err := s.db.db.QueryRowContext(ctx, `SELECT count(*) FROM coupons WHERE user_id = ?`, user).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("coupons of user %d: %w", user, err)
	}
	if offset >= total || limit <= 0 {
		return []*quan.Coupon{}, total, nil
	}
	cs, err := s.queryCoupons(ctx, `SELECT `+couponColumns+` FROM coupons WHERE user_id = ?
		ORDER BY id DESC LIMIT ? OFFSET ?`, user, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("coupons of user %d: %w", user, err)
	}
	return cs, total, nil
}

// UserHeld implements quan.CouponStore: one range of the (user, template,
// seq) index, which holds every column it reads.
func (s *Store) UserHeld(ctx context.Context, user int64) (_ map[int64]int64, err error) {
	defer s.db.unavailable(&err)
	rows, err := s.db.db.QueryContext(ctx, `SELECT template_id, count(*) FROM coupons WHERE user_id = ? GROUP BY template_id`, user)
	if err != nil {
		return nil, fmt.Errorf("holdings of user %d: %w", user, err)
	}
	defer rows.Close()
	held := map[int64]int64{}
	for rows.Next() {
		var template, n int64
		if err := rows.Scan(&template, &n); err != nil {
			return nil, fmt.Errorf("holdings of user %d: %w", user, err)
		}
		held[template] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("holdings of user %d: %w", user, err)
	}
	return held, nil
}

// OrderCoupons implements quan.WalletStore.
func (s *Store) OrderCoupons(ctx context.Context, user int64, order string, ids []int64) (_ []*quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	query := `SELECT ` + couponColumns + ` FROM coupons WHERE user_id = ? AND (order_id = ?`
	args := make([]any, 0, 2+len(ids))
	args = append(args, user, order)
	if len(ids) > 0 {
		query += ` OR id IN (` + sqlrow.Params(len(ids)) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	// Sorted here: ORDER BY made MariaDB filesort the few rows, a good
	// part of the statement.
	cs, err := s.queryCoupons(ctx, query+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("coupons of user %d for order %s: %w", user, order, err)
	}
	slices.SortFunc(cs, func(a, b *quan.Coupon) int { return cmp.Compare(a.ID, b.ID) })
	return cs, nil
}

// queryCoupons returns the coupons query selects (couponColumns), with
// their codes.
func (s *Store) queryCoupons(ctx context.Context, query string, args ...any) ([]*quan.Coupon, error) {
	rows, err := s.db.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	cs, err := sqlrow.All(rows, sqlrow.ScanCoupon)
	if err != nil {
		return nil, err
	}
	return cs, s.db.codes.Fill(ctx, s.db.db, cs)
}

// CouponStats summarises the coupons of template, in one READ ONLY
// transaction so that its two queries see one snapshot.
//
// Coupons, Users and MaxPerUser come from one pass over the (user,
// template, seq) index, which holds the columns the counts need: there is
// no index by template, so the pass reads the entries of every template. An index led by template_id would make
// it a range, for an index more to keep up on every insert.
//
// FromTask comes from the tasks' issued counters instead of the coupons: a
// chunk adds its issued count in the transaction that inserts its coupons,
// and coupons are never deleted, so the two agree, and the coupons need no
// index by task.
func (s *Store) CouponStats(ctx context.Context, template, task int64) (_ quan.CouponStats, err error) {
	defer s.db.unavailable(&err)
	var st quan.CouponStats
	tx, err := s.db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, fmt.Errorf("coupon stats of template %d: %w", template, err)
	}
	defer tx.Rollback()

	if err := tx.QueryRowContext(ctx, statsSQL, template).Scan(&st.Coupons, &st.Users, &st.MaxPerUser); err != nil {
		return st, fmt.Errorf("coupon stats of template %d: %w", template, err)
	}
	query := `SELECT coalesce(sum(count_issued), 0) FROM tasks WHERE template_id = ?`
	args := []any{template}
	if task != 0 {
		query += ` AND id = ?`
		args = append(args, task)
	}
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&st.FromTask); err != nil {
		return st, fmt.Errorf("coupon stats of template %d: from tasks: %w", template, err)
	}
	return st, nil
}

// statsSQL counts the coupons of a template, its users and the most one
// of them holds, in one pass over the (user, template, seq) index.
const statsSQL = `SELECT coalesce(sum(n), 0), count(*), coalesce(max(n), 0) FROM (
	SELECT count(*) AS n FROM coupons WHERE template_id = ? GROUP BY user_id) AS per_user`

// Holdings streams how many coupons of template each user holds: one pass
// over the (user, template, seq) index, which holds every column it reads
// (there is no index led by template; see CouponStats). The rows stay open
// while the caller consumes them. With at, the same pass counts the
// coupons received in the day and the week of at, by when the user
// received each as holdings (claim.go) does for the period limits: that
// reads every row of the template's coupons, which only a template with
// period limits asks for.
func (s *Store) Holdings(ctx context.Context, template int64, at time.Time) iter.Seq2[quan.Holding, error] {
	what := fmt.Sprintf("holdings of template %d", template)
	if at.IsZero() {
		return unavailableSeq(s.db, sqlrow.Each(ctx, s.db.db, what, sqlrow.ScanHolding,
			`SELECT user_id, count(*) FROM coupons WHERE template_id = ? GROUP BY user_id`, template))
	}
	p := sqlrow.PeriodsOf(at)
	return unavailableSeq(s.db, sqlrow.Each(ctx, s.db.db, what, p.ScanHolding, periodHoldingsSQL,
		utc(p.DayStart), utc(p.DayEnd), utc(p.WeekStart), utc(p.WeekEnd), template))
}

// periodHoldingsSQL counts the coupons of a template each user holds,
// received in the day and in the week (their starts and ends): when the user received a coupon is its claim's At (claimed_at),
// or its creation for a coupon that records no claim (sqlrow.Received).
const periodHoldingsSQL = `SELECT user_id, count(*),
	count(CASE WHEN coalesce(claimed_at, created_at) >= ? AND coalesce(claimed_at, created_at) < ? THEN 1 END),
	count(CASE WHEN coalesce(claimed_at, created_at) >= ? AND coalesce(claimed_at, created_at) < ? THEN 1 END)
	FROM coupons WHERE template_id = ? GROUP BY user_id`
