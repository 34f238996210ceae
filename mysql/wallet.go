package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.WalletStore = (*Store)(nil)

// UpdateCoupons implements quan.WalletStore. The coupons are read FOR
// UPDATE, so two orders locking one coupon take turns and the second sees
// the first's lock. The wallet tries SwapCoupons first: this is the way a
// change goes when the coupons changed between its read and its write.
func (s *Store) UpdateCoupons(ctx context.Context, user int64, ids []int64, fn func([]*quan.Coupon) error) (_ []*quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	var out []*quan.Coupon
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		cs, err := s.updateCoupons(ctx, tx, user, ids, fn)
		out = cs
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update coupons of user %d: %w", user, err)
	}
	return out, nil
}

// updateCoupons is UpdateCoupons in tx.
func (s *Store) updateCoupons(ctx context.Context, tx *sql.Tx, user int64, ids []int64, fn func([]*quan.Coupon) error) ([]*quan.Coupon, error) {
	cs, err := s.lockedCoupons(ctx, tx, `user_id = ? AND id IN (%s) ORDER BY id FOR UPDATE`, user, ids)
	if err != nil {
		return nil, err
	}
	if id, ok := sqlrow.MissingCoupon(ids, cs); ok {
		return nil, quan.Errorf(quan.ENOTFOUND, "user %d holds no coupon %d", user, id)
	}
	before := make([]quan.Coupon, len(cs))
	for i, c := range cs {
		before[i] = *c
	}
	if err := fn(cs); err != nil {
		return nil, err
	}
	var d quan.StatsDelta
	was := make([]*quan.Coupon, len(cs))
	for i, c := range cs {
		was[i] = &before[i]
		if c.Status == before[i].Status && c.OrderID == before[i].OrderID && c.LockedUntil.Equal(before[i].LockedUntil) && c.LockKey == before[i].LockKey {
			continue
		}
		if err := saveCoupon(ctx, tx, c); err != nil {
			return nil, err
		}
		d.Changed(&before[i], c)
	}
	if err := s.moveBudgets(ctx, tx, was, cs); err != nil {
		return nil, err
	}
	if err := sqlrow.RecordCouponEvents(ctx, tx, sqlrow.CouponStatuses(was), cs); err != nil {
		return nil, err
	}
	if err := addStats(ctx, tx, &d); err != nil {
		return nil, err
	}
	return cs, nil
}

// lockedCoupons selects coupons by where, whose %s the ids fill, with
// their codes.
func (s *Store) lockedCoupons(ctx context.Context, tx *sql.Tx, where string, user int64, ids []int64) ([]*quan.Coupon, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := `SELECT ` + couponColumns + ` FROM coupons WHERE ` + fmt.Sprintf(where, sqlrow.Params(len(ids)))
	cs, err := sqlrow.Query(ctx, tx, fmt.Sprintf("coupons of user %d", user), sqlrow.ScanCoupon, q, sqlrow.Args(user, ids)...)
	if err != nil {
		return nil, err
	}
	return cs, s.db.codes.Fill(ctx, tx, cs)
}

// SwapCoupons implements quan.WalletStore. One coupon, what an order
// usually holds, is one UPDATE in a transaction of its own, where a
// locked read and write take five round trips (SET TRANSACTION, BEGIN,
// SELECT … FOR UPDATE, UPDATE, COMMIT); its change of status goes into
// the template's counters in that same UPDATE (swapCounted), rather than
// in a transaction around it with an upsert per table. When that
// UPDATE finds no row, the coupon changed or its counters' rows are not
// made yet, and the transaction of several coupons tells which. Several
// coupons are UPDATEd in one transaction that rolls back at the first that
// changed, and adds to the counters before it commits. An UPDATE that
// meets a lock it would wait for in a transaction (a deadlock, a lock
// wait timeout) reports false too: the locked way decides.
func (s *Store) SwapCoupons(ctx context.Context, user int64, before, after []*quan.Coupon) (_ bool, err error) {
	defer s.db.unavailable(&err)
	if len(before) != len(after) {
		return false, fmt.Errorf("swap coupons of user %d: %d coupons before, %d after", user, len(before), len(after))
	}
	for i, c := range after {
		if c.ID != before[i].ID {
			return false, fmt.Errorf("swap coupons of user %d: coupon %d after, %d before", user, c.ID, before[i].ID)
		}
	}
	var d quan.StatsDelta
	for i, c := range after {
		d.Changed(before[i], c)
	}
	moves, budgets, err := s.db.budgets.Moves(ctx, s.db.db, before, after)
	if err != nil {
		return false, fmt.Errorf("swap coupons of user %d: %w", user, err)
	}
	slot := rand.IntN(statsSlots)
	counted := false // whether one statement tried the coupon and its counters
	// A change that moves a budget goes in a transaction with it.
	if len(after) == 1 && len(moves) == 0 {
		var (
			ok  bool
			err error
		)
		swap := func(db execer) (bool, error) {
			if d.Empty() {
				return swapCoupon(ctx, db, user, before[0], after[0])
			}
			counted = true
			return swapCounted(ctx, db, user, before[0], after[0], &d, slot)
		}
		if quan.CouponEventType(before[0].Status, after[0].Status) == "" {
			ok, err = swap(s.db.db)
		} else {
			// A change of status records its event with it (the outbox):
			// the one statement and the event's INSERT in a transaction.
			err = s.db.tryTx(ctx, func(tx *sql.Tx) error {
				done, err := swap(tx)
				if err != nil {
					return err
				}
				if !done {
					return errNotSwapped
				}
				return sqlrow.RecordCouponEvents(ctx, tx, sqlrow.CouponStatuses(before), after)
			})
			ok = err == nil
			if errors.Is(err, errNotSwapped) {
				err = nil
			}
		}
		if retryable(err) {
			s.db.retries.Add(1)
			return false, nil
		}
		if ok && counted {
			s.db.countedSwaps.Add(1)
		}
		if ok || err != nil || !counted {
			return ok, err
		}
		// Either the coupon changed or its counters' rows are not there
		// yet: the transaction tells which.
	}
	// A change the statistics count goes in a transaction with them.
	err = s.db.tryTx(ctx, func(tx *sql.Tx) error {
		for i, c := range after {
			ok, err := swapCoupon(ctx, tx, user, before[i], c)
			if err != nil {
				return err
			}
			if !ok {
				return errNotSwapped
			}
		}
		if len(moves) > 0 {
			if err := sqlrow.MoveBudgets(ctx, tx, moves, budgets, `INSERT IGNORE`); err != nil {
				return err
			}
		}
		if err := sqlrow.RecordCouponEvents(ctx, tx, sqlrow.CouponStatuses(before), after); err != nil {
			return err
		}
		return addStatsSlot(ctx, tx, &d, slot)
	})
	if err == nil && counted {
		// The coupon was as read, so the one statement missed the
		// counters' rows: they are made for the next.
		if err := ensureStatsRows(ctx, s.db.db, &d); err != nil {
			return false, fmt.Errorf("swap coupons of user %d: %w", user, err)
		}
	}
	switch {
	case retryable(err):
		s.db.retries.Add(1)
		return false, nil
	case errors.Is(err, errNotSwapped):
		return false, nil
	case quan.ErrorCode(err) == quan.ENOTUSABLE:
		return false, err // the budget refused: nothing was written
	case err != nil:
		return false, fmt.Errorf("swap coupons of user %d: %w", user, err)
	}
	return true, nil
}

// errNotSwapped rolls back a swap that found a coupon changed.
var errNotSwapped = errors.New("a coupon changed before the swap")

// execer is a connection pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// swapCoupon writes c over was if the coupon is still as was.
func swapCoupon(ctx context.Context, db execer, user int64, was, c *quan.Coupon) (bool, error) {
	order, until := couponLock(c)
	wasOrder, wasUntil := couponLock(was)
	// By the primary key: MariaDB would go through (user_id, …) first.
	// Every change of lock_key changes updated_at, which is compared.
	res, err := db.ExecContext(ctx, `UPDATE coupons FORCE INDEX (PRIMARY) SET status = ?, order_id = ?, locked_until = ?, lock_key = ?, discount = ?, updated_at = ?
		WHERE id = ? AND user_id = ? AND status = ? AND order_id <=> ? AND locked_until <=> ? AND updated_at = ?`,
		string(c.Status), order, until, lockKey(c), c.Discount, utc(c.UpdatedAt),
		c.ID, user, string(was.Status), wasOrder, wasUntil, utc(was.UpdatedAt))
	if err != nil {
		return false, fmt.Errorf("swap coupon %d: %w", c.ID, translate(err))
	}
	// Found rows (clientFoundRows): 0 if the coupon is not as it was read.
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("swap coupon %d: %w", c.ID, err)
	}
	return n == 1, nil
}

// swapCounted writes c over was if the coupon is still as was and adds d,
// the change of that coupon, to its template's counters in slot (and to
// those of the hour d names), all in one statement: one round trip and one
// commit, as swapCoupon alone. The tables are joined in the order the
// transactions of the other changes lock them (the coupon, its template's
// slot, the hour's slot), so that the two ways cannot deadlock on each
// other. It reports false when the coupon is not as was or when a
// counters' row is missing: the join then finds no row and nothing
// changes.
func swapCounted(ctx context.Context, db execer, user int64, was, c *quan.Coupon, d *quan.StatsDelta, slot int) (bool, error) {
	ts, hs := d.Templates(), d.Hours()
	if len(ts) != 1 || len(hs) > 1 || len(d.Failures()) > 0 || ts[0].TemplateID != c.TemplateID {
		return false, fmt.Errorf("swap coupon %d: the change of one coupon counts in its template's row and at most one hour's", c.ID)
	}
	order, until := couponLock(c)
	wasOrder, wasUntil := couponLock(was)
	var q strings.Builder
	q.WriteString(`UPDATE coupons c FORCE INDEX (PRIMARY) STRAIGHT_JOIN template_stats s`)
	if len(hs) == 1 {
		q.WriteString(` STRAIGHT_JOIN template_stats_hourly h`)
	}
	q.WriteString(` SET c.status = ?, c.order_id = ?, c.locked_until = ?, c.lock_key = ?, c.discount = ?, c.updated_at = ?`)
	args := []any{string(c.Status), order, until, lockKey(c), c.Discount, utc(c.UpdatedAt)}
	for i, n := range sqlrow.TemplateDeltaArgs(ts[0]) {
		if n.(int64) != 0 {
			col := sqlrow.StatsCounters[i]
			q.WriteString(`, s.` + col + ` = s.` + col + ` + ?`)
			args = append(args, n)
		}
	}
	if len(hs) == 1 {
		q.WriteString(`, h.issued = h.issued + ?, h.used = h.used + ?`)
		args = append(args, hs[0].Issued, hs[0].Used)
	}
	q.WriteString(` WHERE c.id = ? AND c.user_id = ? AND c.status = ? AND c.order_id <=> ? AND c.locked_until <=> ? AND c.updated_at = ?
		AND s.template_id = c.template_id AND s.slot = ?`)
	args = append(args, c.ID, user, string(was.Status), wasOrder, wasUntil, utc(was.UpdatedAt), slot)
	rows := int64(2)
	if len(hs) == 1 {
		q.WriteString(` AND h.template_id = c.template_id AND h.hour = ? AND h.slot = ?`)
		args = append(args, utc(hs[0].Hour), slot)
		rows++
	}
	res, err := db.ExecContext(ctx, q.String(), args...)
	if err != nil {
		return false, fmt.Errorf("swap coupon %d: %w", c.ID, translate(err))
	}
	// Found rows (clientFoundRows), summed over the tables: one each, or
	// none when the join found nothing.
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return false, fmt.Errorf("swap coupon %d: %w", c.ID, err)
	case n != 0 && n != rows:
		return false, fmt.Errorf("swap coupon %d: %d rows changed, want %d", c.ID, n, rows)
	}
	return n == rows, nil
}

// couponLock returns the order and lock end of c as the columns hold them.
func couponLock(c *quan.Coupon) (order sql.NullString, until any) {
	return sqlrow.NullString(c.OrderID), nullTime(c.LockedUntil)
}

// lockKey returns the lock key of c as the column holds it.
func lockKey(c *quan.Coupon) sql.NullString {
	return sql.NullString{String: c.LockKey, Valid: c.LockKey != ""}
}

// moveBudgets moves the budgets of the templates the change of coupons
// from before to after reserves or spends (quan.BudgetMoves) in tx: a
// quan.BudgetSpentError if one cannot take it. The budget's row lock
// orders concurrent moves of a template.
func (s *Store) moveBudgets(ctx context.Context, tx *sql.Tx, before, after []*quan.Coupon) error {
	moves, budgets, err := s.db.budgets.Moves(ctx, tx, before, after)
	if err != nil || len(moves) == 0 {
		return err
	}
	return sqlrow.MoveBudgets(ctx, tx, moves, budgets, `INSERT IGNORE`)
}

// BudgetUsage implements quan.WalletStore.
func (s *Store) BudgetUsage(ctx context.Context, template int64) (_ quan.BudgetUsage, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.BudgetUsage(ctx, s.db.db, template)
}

func saveCoupon(ctx context.Context, tx *sql.Tx, c *quan.Coupon) error {
	order, until := couponLock(c)
	if _, err := tx.ExecContext(ctx, `UPDATE coupons SET status = ?, order_id = ?, locked_until = ?, lock_key = ?, discount = ?, updated_at = ? WHERE id = ?`,
		string(c.Status), order, until, lockKey(c), c.Discount, utc(c.UpdatedAt), c.ID); err != nil {
		return fmt.Errorf("save coupon %d: %w", c.ID, translate(err))
	}
	return nil
}

// errLapseRaced says that due coupons read without a lock changed before
// the UPDATE took them: another sweeper took them first, or they were
// revoked.
var errLapseRaced = errors.New("the due coupons changed under the sweep")

// LapseCoupons implements quan.WalletStore. The available coupons whose
// window closed are read along the (status, valid_end) index without a
// lock and expired by UPDATEs that take only those still available and
// due. If they take fewer, something came between (another sweeper, a
// revoke): the transaction rolls back and the batch is picked again FOR
// UPDATE SKIP LOCKED, so that several sweepers share the work. Picking
// every batch that way took a quarter longer: a million coupons in 14.6 s
// against 11.3 s on 2 cores, most of it in the locking read, which READ
// COMMITTED makes twice as slow as a plain one. Locks that ran out, few,
// are always picked FOR UPDATE SKIP LOCKED.
//
// The coupons it returns carry what the sweeper's events name, the
// coupon, its template, shop and holder, with what changed: the new
// status, no order, no lock, now as UpdatedAt.
func (s *Store) LapseCoupons(ctx context.Context, now time.Time, limit int) (_ []*quan.Coupon, _ []quan.CouponStatus, err error) {
	defer s.db.unavailable(&err)
	cs, was, err := s.lapseCoupons(ctx, now, limit, false)
	if errors.Is(err, errLapseRaced) {
		s.db.retries.Add(1)
		cs, was, err = s.lapseCoupons(ctx, now, limit, true)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lapse coupons: %w", err)
	}
	return cs, was, nil
}

// lapseCoupons is one attempt of LapseCoupons; with lock, the available
// coupons are picked FOR UPDATE SKIP LOCKED too.
func (s *Store) lapseCoupons(ctx context.Context, now time.Time, limit int, lock bool) ([]*quan.Coupon, []quan.CouponStatus, error) {
	var (
		cs  []*quan.Coupon
		was []quan.CouponStatus
	)
	err := s.db.inTx(ctx, func(tx *sql.Tx) error {
		cs, was = nil, nil
		pick := `SELECT id, template_id, shop_no, user_id, valid_end, locked_until, discount FROM coupons
			WHERE status = 'available' AND valid_end <= ? ORDER BY valid_end LIMIT ?`
		if lock {
			pick += ` FOR UPDATE SKIP LOCKED`
		}
		due, err := dueCoupons(ctx, tx, quan.CouponAvailable, pick, now, limit)
		if err != nil {
			return err
		}
		// Chunks below in_predicate_conversion_threshold (1,000): MariaDB
		// takes a longer IN list as a join, whose rows it may lock out of
		// id order, where two sweepers could deadlock.
		for part := range slices.Chunk(due, claimBatch) {
			args := make([]any, 0, 2+len(part))
			args = append(args, utc(now))
			for _, c := range part {
				args = append(args, c.ID)
			}
			args = append(args, utc(now))
			res, err := tx.ExecContext(ctx, `UPDATE coupons SET status = 'expired', updated_at = ?
				WHERE id IN (`+sqlrow.Params(len(part))+`) AND status = 'available' AND valid_end <= ?`, args...)
			if err != nil {
				return fmt.Errorf("expire %d coupons: %w", len(part), translate(err))
			}
			// Found rows (clientFoundRows): those still available and due.
			if n, err := res.RowsAffected(); err != nil {
				return fmt.Errorf("expire %d coupons: %w", len(part), err)
			} else if n != int64(len(part)) {
				if lock {
					return fmt.Errorf("expire %d coupons locked for it: %d were due", len(part), n)
				}
				return errLapseRaced
			}
		}
		for _, c := range due {
			c.Lapse(now)
			cs, was = append(cs, c), append(was, quan.CouponAvailable)
		}
		if left := limit - len(cs); left > 0 {
			locked, err := dueCoupons(ctx, tx, quan.CouponLocked, `SELECT id, template_id, shop_no, user_id, valid_end, locked_until, discount FROM coupons
				WHERE status = 'locked' AND locked_until <= ? LIMIT ? FOR UPDATE SKIP LOCKED`, now, left)
			if err != nil {
				return err
			}
			before := make([]*quan.Coupon, len(locked))
			for i, c := range locked {
				b := *c
				before[i] = &b
			}
			for part := range slices.Chunk(locked, claimBatch) {
				if err := lapse(ctx, tx, part, now); err != nil {
					return err
				}
			}
			// The locks that ran out give back what they reserved.
			if err := s.moveBudgets(ctx, tx, before, locked); err != nil {
				return err
			}
			for _, c := range locked {
				cs, was = append(cs, c), append(was, quan.CouponLocked)
			}
		}
		var d quan.StatsDelta
		for i, c := range cs {
			d.Moved(c.TemplateID, c.ShopNo, was[i], c.Status)
		}
		if err := sqlrow.RecordCouponEvents(ctx, tx, was, cs); err != nil {
			return err
		}
		return addStats(ctx, tx, &d)
	})
	return cs, was, err
}

// dueCoupons runs query, which selects id, template_id, shop_no, user_id,
// valid_end, locked_until and discount of coupons due at now, up to limit, and
// returns them as coupons of status from.
func dueCoupons(ctx context.Context, tx *sql.Tx, from quan.CouponStatus, query string, now time.Time, limit int) ([]*quan.Coupon, error) {
	rows, err := tx.QueryContext(ctx, query, utc(now), limit)
	if err != nil {
		return nil, fmt.Errorf("lapse %s coupons: %w", from, err)
	}
	defer rows.Close()
	var due []*quan.Coupon
	for rows.Next() {
		c := &quan.Coupon{Status: from}
		if err := rows.Scan(&c.ID, &c.TemplateID, &c.ShopNo, &c.UserID, sqlrow.Time(&c.ValidEnd), sqlrow.NullTime(&c.LockedUntil), &c.Discount); err != nil {
			return nil, fmt.Errorf("lapse %s coupons: %w", from, err)
		}
		due = append(due, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lapse %s coupons: %w", from, err)
	}
	return due, nil
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
		if _, err := tx.ExecContext(ctx, `UPDATE coupons SET status = ?, order_id = NULL, locked_until = NULL, lock_key = NULL, discount = 0, updated_at = ?
			WHERE id IN (`+sqlrow.Params(len(ids))+`)`, args...); err != nil {
			return fmt.Errorf("lapse %d coupons: %w", len(ids), translate(err))
		}
	}
	return nil
}
