package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.WalletStore = (*Store)(nil)

// UpdateCoupons implements quan.WalletStore in one write transaction.
func (s *Store) UpdateCoupons(ctx context.Context, user int64, ids []int64, fn func([]*quan.Coupon) error) (_ []*quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("update coupons of user %d: %w", user, err)
	}
	defer tx.Rollback()
	cs, err := s.updateCoupons(ctx, tx, user, ids, fn)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("update coupons of user %d: commit: %w", user, translate(err))
	}
	return cs, nil
}

// updateCoupons is UpdateCoupons in tx, which the caller commits.
func (s *Store) updateCoupons(ctx context.Context, tx *sql.Tx, user int64, ids []int64, fn func([]*quan.Coupon) error) ([]*quan.Coupon, error) {
	cs, err := s.userCoupons(ctx, tx, user, ids)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("update coupons of user %d: %w", user, err)
	}
	if err := sqlrow.RecordCouponEvents(ctx, tx, sqlrow.CouponStatuses(was), cs); err != nil {
		return nil, fmt.Errorf("update coupons of user %d: %w", user, err)
	}
	if err := s.addStats(ctx, tx, &d); err != nil {
		return nil, fmt.Errorf("update coupons of user %d: %w", user, err)
	}
	return cs, nil
}

// userCoupons loads coupons ids of user in id order, with their codes,
// or ErrNotFound.
func (s *Store) userCoupons(ctx context.Context, tx *sql.Tx, user int64, ids []int64) ([]*quan.Coupon, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	cs := make([]*quan.Coupon, 0, len(ids))
	for part := range slices.Chunk(ids, batchRows) {
		got, err := sqlrow.Query(ctx, tx, fmt.Sprintf("coupons of user %d", user), sqlrow.ScanCoupon,
			`SELECT `+couponColumns+` FROM coupons WHERE user_id = ? AND id IN (`+sqlrow.Params(len(part))+`) ORDER BY id`,
			sqlrow.Args(user, part)...)
		if err != nil {
			return nil, err
		}
		cs = append(cs, got...)
	}
	if id, ok := sqlrow.MissingCoupon(ids, cs); ok {
		return nil, quan.Errorf(quan.ENOTFOUND, "user %d holds no coupon %d", user, id)
	}
	return cs, s.db.codes.Fill(ctx, tx, cs)
}

// moveBudgets moves the budgets of the templates the change of coupons
// from before to after reserves or spends (quan.BudgetMoves) in tx: a
// quan.BudgetSpentError if one cannot take it.
func (s *Store) moveBudgets(ctx context.Context, tx *sql.Tx, before, after []*quan.Coupon) error {
	moves, budgets, err := s.db.budgets.Moves(ctx, tx, before, after)
	if err != nil || len(moves) == 0 {
		return err
	}
	return sqlrow.MoveBudgets(ctx, tx, moves, budgets, `INSERT OR IGNORE`)
}

// BudgetUsage implements quan.WalletStore.
func (s *Store) BudgetUsage(ctx context.Context, template int64) (_ quan.BudgetUsage, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.BudgetUsage(ctx, s.db.read, template)
}

func saveCoupon(ctx context.Context, tx *sql.Tx, c *quan.Coupon) error {
	if _, err := tx.ExecContext(ctx, `UPDATE coupons SET status = ?, order_id = ?, locked_until = ?, lock_key = ?, discount = ?, updated_at = ? WHERE id = ?`,
		c.Status, sqlrow.NullString(c.OrderID), nullMicros(c.LockedUntil), sqlrow.NullString(c.LockKey), c.Discount, micros(c.UpdatedAt), c.ID); err != nil {
		return fmt.Errorf("save coupon %d: %w", c.ID, translate(err))
	}
	return nil
}

// swapCouponSQL writes a coupon if it is as it was read. Every change of
// lock_key changes updated_at, which is compared.
const swapCouponSQL = `UPDATE coupons SET status = ?, order_id = ?, locked_until = ?, lock_key = ?, discount = ?, updated_at = ?
	WHERE id = ? AND user_id = ? AND status = ? AND order_id IS ? AND locked_until IS ? AND updated_at = ?`

// SwapCoupons implements quan.WalletStore. The swaps waiting for the
// one writer go together in one write transaction (a group commit), whose
// counters (quan.StatsDelta) are written once: each commit appends every
// page it changed to the WAL, and the pages of a template's counters,
// which every swap that changes a status would otherwise write on its
// own, and of its neighbours' coupons, are then written once per batch.
// A swap whose coupons are not as read changes nothing (a SAVEPOINT undoes
// the coupons of several it wrote); a statement that fails fails the
// batch, and every swap of it reports the error with nothing written.
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
	r := &swapRequest{ctx: ctx, user: user, before: before, after: after, done: make(chan swapResult, 1)}
	q := &s.db.swaps
	q.mu.Lock()
	q.pending = append(q.pending, r)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	if lead {
		s.leadSwaps(ctx)
	}
	for {
		var res swapResult
		select {
		case res = <-r.done:
		case <-ctx.Done():
			if q.withdraw(r) {
				return false, fmt.Errorf("swap coupons of user %d: %w", user, ctx.Err())
			}
			res = <-r.done
		}
		if !res.lead {
			return res.ok, res.err
		}
		s.leadSwaps(ctx)
	}
}

// swapQueue holds the swaps waiting for the writer. One caller at a time
// leads: it takes every swap waiting, writes them in one transaction,
// answers them, and hands the lead to the first swap that came meanwhile,
// so that no caller writes more than one batch of others'.
type swapQueue struct {
	mu      sync.Mutex
	pending []*swapRequest
	leading bool
}

type swapRequest struct {
	ctx           context.Context
	user          int64
	before, after []*quan.Coupon
	done          chan swapResult // buffered: one answer, or the lead
	handed        bool            // the lead was handed to it; under mu
}

type swapResult struct {
	ok   bool
	err  error
	lead bool // lead the next batch, which holds this swap
}

// withdraw takes r out of the queue if no batch took it and the lead
// was not handed to it, and reports whether it did.
func (q *swapQueue) withdraw(r *swapRequest) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.handed {
		return false
	}
	for i, p := range q.pending {
		if p == r {
			q.pending = slices.Delete(q.pending, i, i+1)
			return true
		}
	}
	return false
}

// leadSwaps writes the swaps waiting as one batch, then hands the lead to
// the first that came meanwhile, if any. The batch runs without ctx's
// cancellation: it writes others' swaps too.
func (s *Store) leadSwaps(ctx context.Context) {
	q := &s.db.swaps
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	q.mu.Unlock()
	answered := false
	defer func() {
		if !answered {
			// A panic: nobody of the batch waits for ever, and the next
			// swap finds a leader.
			for _, r := range batch {
				r.done <- swapResult{err: fmt.Errorf("swap coupons of user %d: the batch's writer panicked", r.user)}
			}
		}
		q.handOn()
	}()
	results := s.swapBatch(context.WithoutCancel(ctx), batch)
	for i, r := range batch {
		r.done <- results[i]
	}
	answered = true
}

// handOn hands the lead to the first swap waiting, if any.
func (q *swapQueue) handOn() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		q.leading = false
		return
	}
	next := q.pending[0]
	next.handed = true
	next.done <- swapResult{lead: true}
}

// swapBatch writes the swaps of batch in one write transaction and
// returns their answers, in order.
func (s *Store) swapBatch(ctx context.Context, batch []*swapRequest) []swapResult {
	out := make([]swapResult, len(batch))
	fail := func(err error) []swapResult {
		for i, r := range batch {
			out[i] = swapResult{err: fmt.Errorf("swap coupons of user %d: %w", r.user, err)}
		}
		return out
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	var d quan.StatsDelta
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			out[i] = swapResult{err: fmt.Errorf("swap coupons of user %d: %w", r.user, err)}
			continue
		}
		moves, budgets, err := s.db.budgets.Moves(ctx, tx, r.before, r.after)
		if err != nil {
			return fail(err)
		}
		// A swap that moves a budget may be refused after its coupons
		// are written: a savepoint undoes them.
		several := len(r.after) > 1 || len(moves) > 0
		if several {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT swap`); err != nil {
				return fail(err)
			}
		}
		ok := true
		for j, c := range r.after {
			was := r.before[j]
			res, err := s.db.writeStmts.exec(ctx, tx, swapCouponSQL,
				c.Status, sqlrow.NullString(c.OrderID), nullMicros(c.LockedUntil), sqlrow.NullString(c.LockKey), c.Discount, micros(c.UpdatedAt),
				c.ID, r.user, was.Status, sqlrow.NullString(was.OrderID), nullMicros(was.LockedUntil), micros(was.UpdatedAt))
			if err != nil {
				return fail(fmt.Errorf("swap coupon %d: %w", c.ID, translate(err)))
			}
			if n, err := res.RowsAffected(); err != nil {
				return fail(fmt.Errorf("swap coupon %d: %w", c.ID, err))
			} else if n != 1 {
				ok = false
				break
			}
		}
		var refused error
		if ok && len(moves) > 0 {
			refused = sqlrow.MoveBudgets(ctx, tx, moves, budgets, `INSERT OR IGNORE`)
			if quan.ErrorCode(refused) != quan.ENOTUSABLE && refused != nil {
				return fail(refused)
			}
		}
		if several && (!ok || refused != nil) {
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO swap`); err != nil {
				return fail(err)
			}
		}
		if several {
			if _, err := tx.ExecContext(ctx, `RELEASE swap`); err != nil {
				return fail(err)
			}
		}
		if refused != nil {
			out[i] = swapResult{err: refused}
			continue
		}
		if ok {
			for j, c := range r.after {
				d.Changed(r.before[j], c)
			}
			if err := sqlrow.RecordCouponEvents(ctx, tx, sqlrow.CouponStatuses(r.before), r.after); err != nil {
				return fail(err)
			}
		}
		out[i] = swapResult{ok: ok}
	}
	if err := s.addStats(ctx, tx, &d); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", translate(err)))
	}
	return out
}

// The statements of LapseCoupons: ?1 now, ?2 the most coupons. Each walks
// a partial index of its status (coupons_available_valid_end,
// coupons_status_locked_until) from the oldest due entry.
const (
	lapseAvailableSQL = `UPDATE coupons SET status = 'expired', updated_at = ?1
		WHERE id IN (SELECT id FROM coupons WHERE status = 'available' AND valid_end <= ?1 ORDER BY valid_end LIMIT ?2)
		RETURNING id, template_id, shop_no, user_id`
	lapseLockedSQL = `UPDATE coupons
		SET status = CASE WHEN valid_end <= ?1 THEN 'expired' ELSE 'available' END,
			order_id = NULL, locked_until = NULL, lock_key = NULL, discount = 0, updated_at = ?1
		WHERE id IN (SELECT id FROM coupons WHERE status = 'locked' AND locked_until <= ?1 LIMIT ?2)
		RETURNING id, template_id, shop_no, user_id, status`
)

// lockedDiscountsSQL reads the locks lapseLockedSQL takes that reserved a
// discount.
const lockedDiscountsSQL = `SELECT id, template_id, discount FROM coupons
	WHERE id IN (SELECT id FROM coupons WHERE status = 'locked' AND locked_until <= ?1 LIMIT ?2) AND discount > 0`

func scanHeldDiscount(row sqlrow.Scanner) (*quan.Coupon, error) {
	c := &quan.Coupon{Status: quan.CouponLocked}
	return c, row.Scan(&c.ID, &c.TemplateID, &c.Discount)
}

// LapseCoupons implements quan.WalletStore: one UPDATE … RETURNING per
// kind, each walking its index from the oldest due entry. The coupons it
// returns carry what the sweeper's events name, the coupon, its template,
// shop and holder, with what changed: the new status, no order, no lock,
// now as UpdatedAt. Whole rows through RETURNING took nearly half as long
// again to sweep (a million coupons on 2 cores: 7.2 s against 5.0 s),
// most of it in scanning every column of every row.
func (s *Store) LapseCoupons(ctx context.Context, now time.Time, limit int) (_ []*quan.Coupon, _ []quan.CouponStatus, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("lapse coupons: %w", err)
	}
	defer tx.Rollback()
	var (
		cs  []*quan.Coupon
		was []quan.CouponStatus
	)
	run := func(query string, from quan.CouponStatus, args ...any) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("lapse %s coupons: %w", from, err)
		}
		defer rows.Close()
		for rows.Next() {
			c := &quan.Coupon{Status: quan.CouponExpired, UpdatedAt: now}
			dest := []any{&c.ID, &c.TemplateID, &c.ShopNo, &c.UserID}
			if from == quan.CouponLocked {
				dest = append(dest, &c.Status)
			}
			if err := rows.Scan(dest...); err != nil {
				return fmt.Errorf("lapse %s coupons: %w", from, err)
			}
			cs, was = append(cs, c), append(was, from)
		}
		return rows.Err()
	}
	at := micros(now)
	if err := run(lapseAvailableSQL, quan.CouponAvailable, at, limit); err != nil {
		return nil, nil, err
	}
	if left := limit - len(cs); left > 0 {
		// The discounts the locks reserved, read before the UPDATE clears
		// them, to give back what it lapses: the same rows, as nothing
		// else writes in this transaction.
		held, err := sqlrow.Query(ctx, tx, "the discounts of locks run out", scanHeldDiscount, lockedDiscountsSQL, at, left)
		if err != nil {
			return nil, nil, err
		}
		n := len(cs)
		if err := run(lapseLockedSQL, quan.CouponLocked, at, left); err != nil {
			return nil, nil, err
		}
		byID := make(map[int64]*quan.Coupon, len(held))
		for _, h := range held {
			byID[h.ID] = h
		}
		var before, after []*quan.Coupon
		for _, c := range cs[n:] {
			if h := byID[c.ID]; h != nil {
				before, after = append(before, h), append(after, &quan.Coupon{ID: c.ID, TemplateID: c.TemplateID, Status: c.Status})
			}
		}
		if err := s.moveBudgets(ctx, tx, before, after); err != nil {
			return nil, nil, fmt.Errorf("lapse coupons: %w", err)
		}
	}
	var d quan.StatsDelta
	for i, c := range cs {
		d.Moved(c.TemplateID, c.ShopNo, was[i], c.Status)
	}
	if err := sqlrow.RecordCouponEvents(ctx, tx, was, cs); err != nil {
		return nil, nil, fmt.Errorf("lapse coupons: %w", err)
	}
	if err := s.addStats(ctx, tx, &d); err != nil {
		return nil, nil, fmt.Errorf("lapse coupons: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, fmt.Errorf("lapse coupons: commit: %w", translate(err))
	}
	return cs, was, nil
}

var _ quan.Archiver = (*Store)(nil)

// ArchiveCoupons implements quan.Archiver in one write transaction.
func (s *Store) ArchiveCoupons(ctx context.Context, before, now time.Time, limit int) (_ int, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("archive coupons: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS archiving (id INTEGER PRIMARY KEY)`); err != nil {
		return 0, fmt.Errorf("archive coupons: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM archiving`); err != nil {
		return 0, fmt.Errorf("archive coupons: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO archiving (id)
		SELECT c.id FROM coupons c JOIN templates t ON t.id = c.template_id
		WHERE t.status = 'ended' AND c.status IN ('used', 'expired', 'revoked') AND c.updated_at < ?
			-- SQLite hands out the largest rowid plus one: the newest
			-- coupon stays, so that no id is ever handed out twice.
			AND c.id < (SELECT max(id) FROM coupons)
		LIMIT ?`, micros(before), limit)
	if err != nil {
		return 0, fmt.Errorf("archive coupons: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return 0, err
	}
	// A coupon records the claim that issued it: the claim gets its row
	// in claims before the coupon goes.
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO claims (`+claimColumns+`)
		SELECT `+issuedColumns+` FROM coupons WHERE id IN (SELECT id FROM archiving) AND claim_id IS NOT NULL`); err != nil {
		return 0, fmt.Errorf("archive coupons: record their claims: %w", translate(err))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO coupons_archive (`+couponColumns+`, archived_at)
		SELECT `+couponColumns+`, ? FROM coupons WHERE id IN (SELECT id FROM archiving)`, micros(now)); err != nil {
		return 0, fmt.Errorf("archive coupons: copy: %w", translate(err))
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM coupons WHERE id IN (SELECT id FROM archiving)`); err != nil {
		return 0, fmt.Errorf("archive coupons: delete: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("archive coupons: commit: %w", translate(err))
	}
	return int(n), nil
}
