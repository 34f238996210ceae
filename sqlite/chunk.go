package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// ChunkSize is the chunk size to give tasks this store applies: a commit
// writes every index page its chunk changed, and with random user ids that
// is most of the user index, so bigger chunks share those writes between
// more rows. A million users take 13–14 s in chunks of 5,000 (the domain's
// default), 6.4–7.3 s in chunks of 20,000, 5–5.5 s in chunks of 50,000
// and 4.8–5.2 s in chunks of 100,000, for a peak RSS of 21, 28, 45 and
// 70 MiB (bulk_test.go, 2 cores).
const ChunkSize = 50_000

// Bulk statements carry up to batchRows rows each. More rows per statement
// spare database/sql and the driver a round trip per row; the gain levels
// off around a few hundred, well below SQLite's limit of 32,766 variables.
const batchRows = 500

// InsertBatchRows is how many rows a statement of InsertCoupons carries.
const InsertBatchRows = batchRows

// ApplyChunk applies c in one write transaction, as quan.TaskStore
// requires, and returns the chunk's counts. It leaves c alone unless it
// commits; then c.Rows carry the causes the chunk was decided with, as
// quan.PlanChunk sets them. quan.ErrNotFound if there is no task c.TaskID.
// Undecided rows must name distinct users, as the file check leaves them
// (it marks repeats duplicate_in_file); a chunk that breaks this is
// refused as invalid.
//
// The users' holdings are found by the inserts themselves: the coupons the
// chunk would create if no user held one are inserted with INSERT OR
// IGNORE on the (user, template, seq) index, and only the users whose
// first coupon exists already are looked up and planned again. See
// issueChunk.
func (s *Store) ApplyChunk(ctx context.Context, c *quan.Chunk) (_ quan.TaskCounts, err error) {
	defer s.db.unavailable(&err)
	op := fmt.Sprintf("apply chunk %d of task %d", c.Seq, c.TaskID)
	if err := c.Check(); err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	work := *c
	work.Rows = slices.Clone(c.Rows)

	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	defer tx.Rollback()

	var (
		status   string
		template int64
		dryRun   bool
		notify   string
	)
	err = tx.QueryRowContext(ctx,
		`SELECT status, template_id, dry_run, notify FROM tasks WHERE id = ?`, c.TaskID,
	).Scan(&status, &template, &dryRun, &notify)
	if errors.Is(err, sql.ErrNoRows) {
		return quan.TaskCounts{}, fmt.Errorf("%s: task %d: %w", op, c.TaskID, quan.ErrNotFound)
	}
	if err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	if quan.TaskStatus(status) != quan.TaskRunning {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, quan.Errorf(quan.ELEASELOST,
			"task %d is %s, not running", c.TaskID, status))
	}
	// The ledger entry goes first: a chunk applied before ends here, and
	// the transaction (BEGIN IMMEDIATE) keeps a second writer out until
	// this one commits.
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO task_chunks (task_id, seq) VALUES (?, ?)`, c.TaskID, c.Seq)
	if err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: record the chunk: %w", op, translate(err))
	}
	if k, err := res.RowsAffected(); err != nil || k != 1 {
		if err != nil {
			return quan.TaskCounts{}, fmt.Errorf("%s: record the chunk: %w", op, err)
		}
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, quan.Errorf(quan.ECHUNKAPPLIED,
			"chunk %d of task %d was applied before", c.Seq, c.TaskID))
	}

	if !dryRun {
		var d quan.StatsDelta
		t, err := issueChunk(ctx, tx, &work, template, &d)
		if err != nil {
			return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
		}
		if err := s.addStats(ctx, tx, &d); err != nil {
			return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
		}
		if err := notifyChunk(ctx, tx, &work, notify, t); err != nil {
			return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	n := quan.ChunkCounts(&work, dryRun)
	if err := insertFailures(ctx, tx, &work); err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	f := n.Failed
	if _, err := tx.ExecContext(ctx, `
		UPDATE tasks SET
			count_rows = count_rows + ?, count_valid = count_valid + ?,
			count_issued = count_issued + ?, count_canceled = count_canceled + ?,
			failed_invalid_id = failed_invalid_id + ?,
			failed_inexact_number = failed_inexact_number + ?,
			failed_duplicate = failed_duplicate + ?,
			failed_limit_reached = failed_limit_reached + ?,
			failed_out_of_stock = failed_out_of_stock + ?,
			failed_template_inactive = failed_template_inactive + ?,
			failed_not_eligible = failed_not_eligible + ?,
			chunks_done = chunks_done + 1, bytes_read = max(bytes_read, ?), updated_at = ?
		WHERE id = ?`,
		n.Rows, n.Valid, n.Issued, n.Canceled,
		f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive, f.NotEligible,
		c.BytesRead, micros(c.Now), c.TaskID,
	); err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: save the counts: %w", op, translate(err))
	}
	if err := tx.Commit(); err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: commit: %w", op, translate(err))
	}
	copy(c.Rows, work.Rows)
	return n, nil
}

// AppliedChunks returns the seqs of the chunks of task id applied so far,
// in ascending order: a range of the ledger's primary key.
func (s *Store) AppliedChunks(ctx context.Context, id int64) (_ []int64, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.read, fmt.Sprintf("applied chunks of task %d", id), sqlrow.Int64,
		`SELECT seq FROM task_chunks WHERE task_id = ? ORDER BY seq`, id)
}

// issueChunk decides the undecided rows of c with quan.PlanChunk, takes the
// stock and creates the coupons, all in tx.
//
// PlanChunk needs each user's holdings. Looking them up for every row costs
// an index search per row before the insert repeats it, so instead:
//
//  1. Plan as if nobody held a coupon. Insert the planned coupons, all of
//     seq 1, with INSERT OR IGNORE: an insert the unique (user, template,
//     seq) index ignores is a user who holds one already. (OR IGNORE also
//     spares SQLite a statement journal: ABORT would have to undo a failed
//     multi-row statement alone.)
//  2. Look up the holdings of those users, and of the rows the first plan
//     left out of stock (a stock freed by a user at the limit goes to them;
//     otherwise whether they are limit_reached depends on their holdings).
//  3. Plan again with the holdings found: the plan every adapter makes.
//     Users with no coupon, the rest, hold none: the first plan inserted
//     their first coupon. Insert the coupons still missing (seq 2 and up,
//     or seq 1 for rows the first plan left out), and check that the
//     coupons of step 1 are exactly the plan's coupons of seq 1.
//
// Coupons are never deleted and each is issued with seq = held + 1, so a
// user who holds n coupons of a template holds seq 1 … n: holding none is
// holding no seq 1.
//
// The coupons issued are counted in d, all at once. It returns the
// template as it read it.
func issueChunk(ctx context.Context, tx *sql.Tx, c *quan.Chunk, templateID int64, d *quan.StatsDelta) (*quan.Template, error) {
	t, err := queryTemplate(ctx, tx, quan.AnyShop, templateID)
	if err != nil {
		return nil, err
	}
	if err := issueCoupons(ctx, tx, c, t, d); err != nil {
		return nil, err
	}
	return t, nil
}

func issueCoupons(ctx context.Context, tx *sql.Tx, c *quan.Chunk, t *quan.Template, d *quan.StatsDelta) error {
	templateID := t.ID
	proto := quan.NewCoupon(t, 0, 0, c.TaskID, c.Now)
	ins, err := newCouponInserter(ctx, tx, "coupons", &proto)
	if err != nil {
		return err
	}
	defer ins.close()

	// 1. The plan if nobody held a coupon.
	first := *c
	first.Rows = slices.Clone(c.Rows)
	var planned []userSeq
	probed := make([]bool, len(c.Rows)) // whether the row's first coupon was inserted
	for _, is := range quan.PlanChunk(&first, t, nil, nil, t.Stock) {
		u := first.Rows[is.Row].UserID
		if is.Seq != 1 {
			return fmt.Errorf("the plan for users holding nothing gave user %d seq %d", u, is.Seq)
		}
		planned = append(planned, userSeq{u, 1})
		probed[is.Row] = true
	}
	// In user order, the inserts walk the user index from left to right,
	// each of its pages read and changed once per chunk, so the page cache
	// need not hold the index: 2.5 times as fast as file order with
	// SQLite's default cache of 2 MB (forms_test.go).
	slices.SortFunc(planned, userOrder)
	held := map[int64]int64{}
	ignored, err := ins.probe(ctx, planned, held)
	if err != nil {
		return err
	}
	if len(ignored) > 0 {
		for i, r := range c.Rows {
			if _, ok := slices.BinarySearch(ignored, r.UserID); ok && probed[i] {
				probed[i] = false
			}
		}
	}
	var lookup []int64 // users whose holdings the final plan needs
	for i, r := range first.Rows {
		if c.Rows[i].Cause == "" && (r.Cause == quan.CauseOutOfStock || r.Cause == quan.CauseLimitReached) {
			lookup = append(lookup, r.UserID)
		}
	}

	// 2. The holdings of the rows the first plan left out.
	if err := heldCounts(ctx, tx, templateID, lookup, held); err != nil {
		return err
	}

	// 3. The plan. A user holding nothing received nothing in any
	// period: the period counts are read of those holding some.
	var periods *quan.PeriodHeld
	if t.HasPeriodLimits() {
		periods = &quan.PeriodHeld{}
		holders := make([]int64, 0, len(held))
		for u, n := range held {
			if n > 0 {
				holders = append(holders, u)
			}
		}
		slices.Sort(holders)
		if err := holdings(ctx, tx, templateID, holders, map[int64]int64{}, map[string]*quan.Claim{}, periods); err != nil {
			return err
		}
	}
	issues := quan.PlanChunk(c, t, held, periods, t.Stock)
	var rest []userSeq
	confirmed := 0
	for _, is := range issues {
		u := c.Rows[is.Row].UserID
		if probed[is.Row] {
			if is.Seq != 1 {
				return fmt.Errorf("user %d got coupon 1 inserted but planned seq %d", u, is.Seq)
			}
			confirmed++
			continue
		}
		rest = append(rest, userSeq{u, is.Seq})
	}
	if inserted := len(planned) - len(ignored); confirmed != inserted {
		return fmt.Errorf("inserted %d first coupons, but the plan issues %d of them", inserted, confirmed)
	}
	slices.SortFunc(rest, userOrder)
	for i := 0; i < len(rest); i += batchRows {
		j := min(i+batchRows, len(rest))
		n, err := ins.insert(ctx, rest[i:j])
		if err != nil {
			return err
		}
		if n != int64(j-i) {
			// Someone holds a coupon this plan numbered as new: the
			// holdings broke the seq rule above.
			return fmt.Errorf("inserted %d of %d coupons: a receive sequence was taken", n, j-i)
		}
	}

	if len(issues) > 0 {
		res, err := tx.ExecContext(ctx,
			`UPDATE templates SET stock = stock - ?1 WHERE id = ?2 AND stock >= ?1`, len(issues), templateID)
		if err != nil {
			return fmt.Errorf("take %d of the stock: %w", len(issues), translate(err))
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("take %d of the stock: the stock read in this transaction changed (%d rows, %v)", len(issues), n, err)
		}
		d.Issued(templateID, t.ShopNo, proto.Source, proto.Status, int64(len(issues)), proto.CreatedAt)
		// The chunk's coupons are those above the floor: SQLite's one
		// writer hands out rowids from the largest up. One statement
		// copies them into the outbox, along the primary key.
		if _, err := tx.ExecContext(ctx, sqlrow.IssuedEventsSQL+`id > ?`, ins.floor); err != nil {
			return fmt.Errorf("record the events of %d coupons: %w", len(issues), translate(err))
		}
	}
	return nil
}

// couponInserter inserts the coupons of one chunk. They are all
// quan.NewCoupon of the same template, task and time, so they differ only
// in user and seq: the rest is bound once per statement as ?1 … ?10.
type couponInserter struct {
	tx       *sql.Tx
	table    string // coupons, or a benchmark's table like it
	template int64
	consts   []any
	floor    int64     // the largest coupon id before the chunk
	full     *sql.Stmt // batchRows rows, prepared on first use
}

func newCouponInserter(ctx context.Context, tx *sql.Tx, table string, proto *quan.Coupon) (*couponInserter, error) {
	ci := &couponInserter{tx: tx, table: table, template: proto.TemplateID}
	// Coupons inserted by this chunk get ids above every existing one
	// (rowids grow from the largest), which tells them from coupons users
	// held before.
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM `+table).Scan(&ci.floor); err != nil {
		return nil, fmt.Errorf("read the last coupon id: %w", err)
	}
	ci.consts = []any{
		proto.TemplateID, proto.ShopNo, proto.Status, micros(proto.ValidStart), micros(proto.ValidEnd),
		proto.Source, sqlrow.NullInt64(proto.TaskID), sqlrow.NullString(proto.OrderID),
		micros(proto.CreatedAt), micros(proto.UpdatedAt),
	}
	return ci, nil
}

func (ci *couponInserter) close() {
	if ci.full != nil {
		ci.full.Close()
	}
}

// userSeq names a coupon to create: a user and a receive sequence.
type userSeq struct{ user, seq int64 }

func userOrder(a, b userSeq) int { return cmp.Compare(a.user, b.user) }

// couponInsertSQL is an INSERT OR IGNORE of n coupons. Anonymous "?"
// parameters number on from the largest before them, so every row after
// the first binds user and seq as the next two. (Numbered parameters cost
// the driver a search of the parameter names per bound value.)
func couponInsertSQL(table string, n int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR IGNORE INTO ` + table + ` (template_id, shop_no, status, valid_start, valid_end,
		source, task_id, order_id, created_at, updated_at, user_id, seq) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?, ?)`)
	}
	return b.String()
}

// insert inserts the coupons cs and returns how many the unique index let
// in.
func (ci *couponInserter) insert(ctx context.Context, cs []userSeq) (int64, error) {
	args := make([]any, 0, len(ci.consts)+2*len(cs))
	args = append(args, ci.consts...)
	for _, c := range cs {
		args = append(args, c.user, c.seq)
	}
	var (
		res sql.Result
		err error
	)
	if len(cs) == batchRows {
		if ci.full == nil {
			if ci.full, err = ci.tx.PrepareContext(ctx, couponInsertSQL(ci.table, batchRows)); err != nil {
				return 0, fmt.Errorf("insert coupons: %w", err)
			}
		}
		res, err = ci.full.ExecContext(ctx, args...)
	} else {
		res, err = ci.tx.ExecContext(ctx, couponInsertSQL(ci.table, len(cs)), args...)
	}
	if err != nil {
		return 0, fmt.Errorf("insert coupons: %w", translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("insert coupons: %w", err)
	}
	return n, nil
}

// probe inserts the first coupons cs, all of seq 1 and sorted by user,
// batchRows a statement, and returns the users of those the unique index
// ignored, sorted: users who held a first coupon already. It adds their
// holdings to held.
func (ci *couponInserter) probe(ctx context.Context, cs []userSeq, held map[int64]int64) ([]int64, error) {
	var missed int64
	for i := 0; i < len(cs); i += batchRows {
		batch := cs[i:min(i+batchRows, len(cs))]
		n, err := ci.insert(ctx, batch)
		if err != nil {
			return nil, err
		}
		missed += int64(len(batch)) - n
	}
	if missed == 0 {
		return nil, nil
	}
	// Which ones: the coupons above the floor are the ones just inserted,
	// a run at the end of the table; the users of cs without one there
	// were ignored.
	rows, err := ci.tx.QueryContext(ctx, insertedSQL, ci.floor)
	if err != nil {
		return nil, fmt.Errorf("read the coupons just inserted: %w", err)
	}
	inserted := make([]int64, 0, len(cs))
	for rows.Next() {
		var u int64
		if err := rows.Scan(&u); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the coupons just inserted: %w", err)
		}
		inserted = append(inserted, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the coupons just inserted: %w", err)
	}
	slices.Sort(inserted)
	var ignored []int64
	for _, c := range cs {
		if _, ok := slices.BinarySearch(inserted, c.user); !ok {
			ignored = append(ignored, c.user)
		}
	}
	if int64(len(ignored)) != missed {
		return nil, fmt.Errorf("%d first coupons were not inserted, but %d users lack one", missed, len(ignored))
	}
	if err := heldCounts(ctx, ci.tx, ci.template, ignored, held); err != nil {
		return nil, err
	}
	return ignored, nil
}

// insertedSQL reads the users of the coupons above an id: a range of the
// table's rowids.
const insertedSQL = `SELECT user_id FROM coupons WHERE id > ?`

// heldCountsSQL counts the coupons of template ?1 that each of n users
// holds: a search of the (user, template, seq) index per user, which also
// holds the columns the query reads.
func heldCountsSQL(n int) string {
	return `SELECT user_id, count(*) FROM coupons
		WHERE template_id = ?1 AND user_id IN (` + sqlrow.Params(n) + `)
		GROUP BY user_id`
}

// heldCounts adds to held how many coupons of template each of users holds,
// leaving out the users who hold none. It searches the unique index once
// per user, batchRows users a statement.
func heldCounts(ctx context.Context, tx *sql.Tx, template int64, users []int64, held map[int64]int64) error {
	for len(users) > 0 {
		n := min(len(users), batchRows)
		args := sqlrow.Args(template, users[:n])
		users = users[n:]
		hs, err := sqlrow.Query(ctx, tx, "count the users' coupons", sqlrow.ScanHolding, heldCountsSQL(n), args...)
		if err != nil {
			return err
		}
		for _, h := range hs {
			held[h.UserID] = h.Count
		}
	}
	return nil
}

// insertFailures records every failed row of c, as sqlrow.ChunkFailures
// gives them. OR IGNORE spares
// SQLite a statement journal; a row it ignores would be a line recorded
// twice, which the checkpoint rules out, and is reported as a conflict.
func insertFailures(ctx context.Context, tx *sql.Tx, c *quan.Chunk) error {
	for part := range slices.Chunk(sqlrow.ChunkFailures(c), batchRows) {
		var b strings.Builder
		b.WriteString(`INSERT OR IGNORE INTO task_failures (task_id, line, raw, cause) VALUES `)
		args := make([]any, 0, 1+3*len(part))
		args = append(args, c.TaskID)
		for i, f := range part {
			if i > 0 {
				b.WriteString(`, `)
			}
			b.WriteString(`(?1, ?, ?, ?)`)
			args = append(args, f.Line, f.Raw, string(f.Cause))
		}
		res, err := tx.ExecContext(ctx, b.String(), args...)
		if err != nil {
			return fmt.Errorf("record failed rows: %w", translate(err))
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(part)) {
			return fmt.Errorf("record failed rows: %w", quan.Errorf(quan.ECONFLICT,
				"%d of %d failed rows of task %d were recorded already", int64(len(part))-n, len(part), c.TaskID))
		}
	}
	return nil
}

// InsertCoupons inserts into table (coupons, or a benchmark's table like
// it) one coupon for each of users, receive sequence 1 and proto's other
// columns, in user order, by the statements and batches a distribution's
// chunk inserts its coupons with, in tx. It is the store's bulk insert
// without the plan around it: for the raw-ingest floor of the benchmarks
// (sqlitetest).
func InsertCoupons(ctx context.Context, tx *sql.Tx, table string, proto *quan.Coupon, users []int64) error {
	ins, err := newCouponInserter(ctx, tx, table, proto)
	if err != nil {
		return err
	}
	defer ins.close()
	rows := make([]userSeq, len(users))
	for i, u := range users {
		rows[i] = userSeq{u, 1}
	}
	slices.SortFunc(rows, userOrder)
	for i := 0; i < len(rows); i += batchRows {
		if _, err := ins.insert(ctx, rows[i:min(i+batchRows, len(rows))]); err != nil {
			return err
		}
	}
	return nil
}
