package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// ChunkSize is the chunk size to give tasks this store applies. Unlike
// SQLite, InnoDB keeps the changed index pages in its buffer pool and
// writes them back in the background, so a commit costs a redo log flush,
// not a rewrite of the user index, and bigger chunks gain less: a million
// random users took 30.7 s in chunks of 1,000, 20.8 s in chunks of 5,000,
// 18.2 s in chunks of 20,000 and 17.4 s in chunks of 50,000 (bulk_test.go;
// 2 cores, MariaDB 10.11 with its default 128 MiB buffer pool on the same
// machine; the server, not this process, was the busy side). A re-run in
// which every user holds the coupon already took 13.3 s in chunks of
// 5,000, nearly all of it recording the million limit_reached rows.
// (Those figures were taken with multi-row INSERTs and the plan made under
// the locks; LOAD DATA and planning first brought a million users in
// chunks of 5,000 to 11.5 s, and two chunks at a time to 9.1 s.)
//
// A chunk holds its template's row lock from its first statement to its
// commit, and every claim and AdjustStock of that template waits for it:
// about 0.1 s for 5,000 rows, 0.35 s for 50,000. 5,000 keeps that wait
// short for 16% more time than the best.
const ChunkSize = 5000

// Bulk statements carry up to batchRows rows each: a statement of 5,000
// coupons is about 600 KB, well under max_allowed_packet (16 MiB by
// default in MariaDB, 64 MiB in MySQL 8), and more rows per statement
// spare a round trip each without making the server's work any cheaper.
const batchRows = 5000

// heldBatch is how many users heldCounts looks up a query: below 1,000,
// where MariaDB (in_predicate_conversion_threshold) turns an IN list into
// a join.
const heldBatch = 900

// ApplyChunk applies c in one READ COMMITTED transaction, as
// quan.TaskStore requires, and returns the chunk's counts. It leaves c
// alone unless it commits; then c.Rows carry the causes the chunk was
// decided with, as quan.PlanChunk sets them. quan.ErrNotFound if there is
// no task c.TaskID. Undecided rows must name distinct users, as the file
// check leaves them (it marks repeats duplicate_in_file); a chunk that
// breaks this is refused as invalid.
//
// Every chunk ends holding the task's row lock (FOR UPDATE), which makes
// chunks of one task and UpdateTask on it take turns over the ledger and
// the counts, and then the template's, which makes every writer of the
// template's stock (other chunks, AdjustStock, UpdateTemplate) take
// turns. Most of a chunk's work, looking up the holdings and writing the
// coupons and failed rows, comes before those locks, so that the chunks
// that workers apply side by side overlap there: see applyChunk.
func (s *Store) ApplyChunk(ctx context.Context, c *quan.Chunk) (_ quan.TaskCounts, err error) {
	defer s.db.unavailable(&err)
	op := fmt.Sprintf("apply chunk %d of task %d", c.Seq, c.TaskID)
	if err := c.Check(); err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	work, n, err := s.applyChunk(ctx, c, false)
	// Deadlocks the retries did not get past (chunks and claims of one
	// template in a stampede) end, like a plan that did not hold, in the
	// locked way, where writers of a template take turns. Even there a
	// LOAD DATA waits for the table's AUTO-INC lock, which a chunk loading
	// before its locks may hold while it waits for a row this one wrote:
	// InnoDB breaks such a deadlock by rolling back one, and in a stampede
	// the same chunk lost five times running once (CI). It goes again.
	for round := 0; round < lockedRounds && (errors.Is(err, errContended) || retryable(err)); round++ {
		s.db.retries.Add(1)
		s.db.logger.Debug("chunk met a concurrent change; applying it under the locks", "task", c.TaskID, "chunk", c.Seq, "round", round, "err", err)
		work, n, err = s.applyChunk(ctx, c, true)
	}
	if err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	copy(c.Rows, work.Rows)
	return n, nil
}

// lockedRounds is how many times a chunk is applied the locked way, each
// with the retries of inTx, before its deadlock is returned.
const lockedRounds = 3

// errContended says that what a chunk planned without the locks did not
// hold once it took them: a coupon another writer inserted for a user of
// the chunk, the template changed, the stock taken. The chunk is then
// applied again with the locks taken first.
var errContended = errors.New("contended")

// applyChunk applies c in one transaction and returns the rows as decided
// and their counts.
//
// Locked, it takes the task's and the template's row locks first and
// plans and writes under them: nothing it reads can change before it
// commits. Otherwise it reads the task, the template and the holdings
// without locks (the latest committed rows, at READ COMMITTED), plans,
// writes the coupons and failed rows, and only then takes the locks and
// checks that the plan still holds: the task still running, the chunk not
// in the ledger, the template's rules unchanged and enough stock for the
// coupons. The (user, template, seq) index guards the holdings: a user
// given a coupon meanwhile holds the seq the plan chose, and the insert
// clashes. What does not hold is errContended; the transaction is rolled
// back. A plan that holds is the one the locked way would have made had it
// run when the plan's reads were made: stock others took meanwhile left
// enough (a plan that refused rows as out of stock takes all there was,
// so any take meanwhile leaves too little), stock added meanwhile comes
// after it.
func (s *Store) applyChunk(ctx context.Context, c *quan.Chunk, locked bool) (quan.Chunk, quan.TaskCounts, error) {
	var (
		work quan.Chunk
		n    quan.TaskCounts
	)
	err := s.db.inTx(ctx, func(tx *sql.Tx) error {
		// A retried attempt starts from the rows as the caller gave them.
		work = *c
		work.Rows = slices.Clone(c.Rows)

		task, err := chunkTask(ctx, tx, c, locked)
		if err != nil {
			return err
		}
		if locked {
			// Under the task's row lock no other chunk of the task is
			// being applied, so the ledger answers for good.
			if err := recordChunk(ctx, tx, c); err != nil {
				return err
			}
		} else if err := chunkApplied(ctx, tx, c); err != nil {
			return err // applied before: no need to plan it
		}
		var take *stockTake
		if !task.dryRun {
			if take, err = s.db.issueChunk(ctx, tx, &work, task.template, locked); err != nil {
				return err
			}
			if err := chunkEvents(ctx, tx, &work, task.template); err != nil {
				return err
			}
		}
		n = quan.ChunkCounts(&work, task.dryRun)
		if err := insertFailures(ctx, tx, &work); err != nil {
			if !locked && isDuplicate(err) {
				return errContended // the same chunk, applied alongside
			}
			return err
		}
		var broadcasts []*quan.Notification
		if take != nil && task.notify != "" {
			if broadcasts, err = notifyChunk(ctx, tx, &work, task.notify, take.planned); err != nil {
				return err
			}
		}
		if !locked {
			if _, err := chunkTask(ctx, tx, c, true); err != nil {
				return err
			}
			if err := recordChunk(ctx, tx, c); err != nil {
				return err
			}
			if err := take.commit(ctx, tx); err != nil {
				return err
			}
		}
		// The task's broadcasts, which every chunk of it records, under the
		// task's lock: chunks of the task take turns over their key.
		if _, err := recordNotifications(ctx, tx, c.Now, broadcasts); err != nil {
			return err
		}
		// The counters last, under the template's lock: one row per chunk.
		if take != nil {
			var d quan.StatsDelta
			d.Issued(take.planned.ID, take.planned.ShopNo, quan.FromDistribution, quan.CouponAvailable, take.n, c.Now)
			if err := addStats(ctx, tx, &d); err != nil {
				return err
			}
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
				chunks_done = chunks_done + 1, bytes_read = GREATEST(bytes_read, ?), updated_at = ?
			WHERE id = ?`,
			n.Rows, n.Valid, n.Issued, n.Canceled,
			f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive, f.NotEligible,
			c.BytesRead, utc(c.Now), c.TaskID,
		); err != nil {
			return fmt.Errorf("save the counts: %w", translate(err))
		}
		return nil
	})
	return work, n, err
}

// chunkTaskRow is what applying a chunk needs of its task.
type chunkTaskRow struct {
	template int64
	dryRun   bool
	notify   string // the channels, a comma list
}

// chunkTask reads c's task, locked with FOR UPDATE or not, and refuses
// it unless it is running: quan.ErrNotFound, or quan.ELEASELOST.
func chunkTask(ctx context.Context, tx *sql.Tx, c *quan.Chunk, lock bool) (chunkTaskRow, error) {
	query := `SELECT status, template_id, dry_run, notify FROM tasks WHERE id = ?`
	if lock {
		query += ` FOR UPDATE`
	}
	var (
		t      chunkTaskRow
		status string
	)
	err := tx.QueryRowContext(ctx, query, c.TaskID).Scan(&status, &t.template, &t.dryRun, &t.notify)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("task %d: %w", c.TaskID, quan.ErrNotFound)
	}
	if err != nil {
		return t, err
	}
	if quan.TaskStatus(status) != quan.TaskRunning {
		return t, quan.Errorf(quan.ELEASELOST, "task %d is %s, not running", c.TaskID, status)
	}
	return t, nil
}

// recordChunk enters c in the ledger, or returns quan.ECHUNKAPPLIED if it
// is there. The caller holds the task's row lock.
func recordChunk(ctx context.Context, tx *sql.Tx, c *quan.Chunk) error {
	res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO task_chunks (task_id, seq) VALUES (?, ?)`, c.TaskID, c.Seq)
	if err != nil {
		return fmt.Errorf("record the chunk: %w", translate(err))
	}
	if k, err := res.RowsAffected(); err != nil || k != 1 {
		if err != nil {
			return fmt.Errorf("record the chunk: %w", err)
		}
		return errApplied(c)
	}
	return nil
}

// chunkApplied returns quan.ECHUNKAPPLIED if the ledger holds c, without
// locking: a chunk applied before is found before any work is done.
func chunkApplied(ctx context.Context, tx *sql.Tx, c *quan.Chunk) error {
	var applied bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM task_chunks WHERE task_id = ? AND seq = ?)`,
		c.TaskID, c.Seq).Scan(&applied); err != nil {
		return fmt.Errorf("look the chunk up in the ledger: %w", err)
	}
	if applied {
		return errApplied(c)
	}
	return nil
}

func errApplied(c *quan.Chunk) error {
	return quan.Errorf(quan.ECHUNKAPPLIED, "chunk %d of task %d was applied before", c.Seq, c.TaskID)
}

// isDuplicate reports whether err is a duplicate key (1062).
func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == errDupEntry
}

// AppliedChunks returns the seqs of the chunks of task id applied so far,
// in ascending order: a range of the ledger's primary key.
func (s *Store) AppliedChunks(ctx context.Context, id int64) (_ []int64, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.db, fmt.Sprintf("applied chunks of task %d", id), sqlrow.Int64,
		`SELECT seq FROM task_chunks WHERE task_id = ? ORDER BY seq`, id)
}

// issueChunk decides the undecided rows of c with quan.PlanChunk and
// creates the coupons, in tx. Locked, it plans under the template's row
// lock and takes the stock at once; otherwise it plans on the template as
// last committed and returns the take for the caller to commit once it
// holds the locks (nil when the plan issues nothing), and a coupon that
// clashes with one inserted meanwhile is errContended.
//
// On InnoDB an insert that hits the unique index is not free: the row is
// written to the clustered index first and then removed again, so a
// re-run in which every user holds the coupon already took 11–13 s for a
// million rows against 6 s for the first run. The holdings are therefore
// looked up first, batchRows users a query, a search of the (user,
// template, seq) index each, and only the coupons the plan issues are
// inserted; under the template's lock none of them can hit the index. The
// inserts go in user order, so that each walks the user index from left
// to right.
func (db *DB) issueChunk(ctx context.Context, tx *sql.Tx, c *quan.Chunk, templateID int64, locked bool) (*stockTake, error) {
	lock := ""
	if locked {
		lock = "FOR UPDATE"
	}
	t, err := queryTemplate(ctx, tx, quan.AnyShop, templateID, lock)
	if err != nil {
		return nil, err
	}
	held := map[int64]int64{}
	if issuing(c, t) {
		var users []int64
		for _, r := range c.Rows {
			if r.Cause == "" {
				users = append(users, r.UserID)
			}
		}
		slices.Sort(users)
		if err := heldCounts(ctx, tx, templateID, users, held); err != nil {
			return nil, err
		}
	}
	var periods *quan.PeriodHeld // the period limits' counts, of users holding some
	if issuing(c, t) && t.HasPeriodLimits() {
		periods = &quan.PeriodHeld{}
		holders := make([]int64, 0, len(held))
		for u, n := range held {
			if n > 0 {
				holders = append(holders, u)
			}
		}
		slices.Sort(holders)
		if err := holdings(ctx, tx, templateID, holders, map[int64]int64{}, map[string]*quan.Claim{}, periods); err != nil {
			return nil, err
		}
	}
	issues := quan.PlanChunk(c, t, held, periods, t.Stock)
	if len(issues) == 0 {
		return nil, nil
	}
	take := &stockTake{planned: t, n: int64(len(issues))}
	if locked {
		if err := take.commit(ctx, tx); err != nil {
			return nil, err
		}
	}

	cs := make([]userSeq, len(issues))
	for i, is := range issues {
		cs[i] = userSeq{c.Rows[is.Row].UserID, is.Seq}
	}
	slices.SortFunc(cs, func(a, b userSeq) int { return cmp.Compare(a.user, b.user) })
	err = db.insertCoupons(ctx, tx, cs, quan.NewCoupon(t, 0, 0, c.TaskID, c.Now))
	if !locked && errors.Is(err, errClash) {
		return nil, errContended
	}
	if err != nil {
		return nil, err
	}
	return take, nil
}

// stockTake is the stock a chunk's plan takes from its template, planned
// on the template as read.
type stockTake struct {
	planned *quan.Template
	n       int64
}

// commit takes the stock, under the template's row lock. Unless the
// template was read under that lock, the rules the plan used must be
// unchanged and the stock enough, or it returns errContended. A nil take
// takes nothing.
func (k *stockTake) commit(ctx context.Context, tx *sql.Tx) error {
	if k == nil {
		return nil
	}
	id := k.planned.ID
	now, err := queryTemplate(ctx, tx, quan.AnyShop, id, "FOR UPDATE")
	if err != nil {
		return err
	}
	if !sameRules(now, k.planned) || now.Stock < k.n {
		return errContended
	}
	res, err := tx.ExecContext(ctx,
		`UPDATE templates SET stock = stock - ? WHERE id = ? AND stock >= ?`, k.n, id, k.n)
	if err != nil {
		return fmt.Errorf("take %d of the stock: %w", k.n, translate(err))
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("take %d of the stock: the stock read under the lock changed (%d rows, %v)", k.n, n, err)
	}
	return nil
}

// sameRules reports whether a and b agree on everything a chunk's plan
// and its coupons depend on but the stock. UpdateTemplate sets UpdatedAt;
// taking stock does not.
func sameRules(a, b *quan.Template) bool {
	return a.ID == b.ID && a.ShopNo == b.ShopNo && a.Status == b.Status && a.PerUserLimit == b.PerUserLimit &&
		a.PerUserDaily == b.PerUserDaily && a.PerUserWeekly == b.PerUserWeekly &&
		a.IssueStart.Equal(b.IssueStart) && a.IssueEnd.Equal(b.IssueEnd) && a.Validity.Kind == b.Validity.Kind &&
		a.Validity.Start.Equal(b.Validity.Start) && a.Validity.End.Equal(b.Validity.End) &&
		a.Validity.Hours == b.Validity.Hours && a.UpdatedAt.Equal(b.UpdatedAt)
}

// insertCoupons creates one coupon per userSeq, with proto's other
// columns, in tx: by LOAD DATA when the server allows it (see
// loadCoupons), otherwise by multi-row INSERTs of batchRows rows.
func (db *DB) insertCoupons(ctx context.Context, tx *sql.Tx, cs []userSeq, proto quan.Coupon) error {
	if !db.noLoad.Load() {
		err := db.loadCoupons(ctx, tx, cs, proto)
		if !refusedLoad(err) {
			return err
		}
		db.noLoad.Store(true)
		db.logger.Warn("the server refuses LOAD DATA LOCAL INFILE (local_infile is off): coupons go by INSERT, which takes the server about twice the CPU",
			"err", err)
	}
	tail, err := couponTail(&proto, false)
	if err != nil {
		return err
	}
	var b []byte
	for len(cs) > 0 {
		batch := cs[:min(len(cs), batchRows)]
		cs = cs[len(batch):]
		b = appendCouponInsert(b[:0], "coupons", batch, tail)
		res, err := tx.ExecContext(ctx, string(b))
		if isDuplicate(err) {
			return fmt.Errorf("insert %d coupons: %w: %w", len(batch), errClash, translate(err))
		}
		if err != nil {
			return fmt.Errorf("insert %d coupons: %w", len(batch), translate(err))
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(batch)) {
			return fmt.Errorf("insert %d coupons: %d inserted (%v)", len(batch), n, err)
		}
	}
	return nil
}

// errClash says a coupon to insert was there already: a user given the
// same receive sequence by another writer.
var errClash = errors.New("a coupon with the same user, template and seq exists")

// issuing reports whether t issues at c.Now, as quan.PlanChunk decides it:
// if not, every undecided row is template_inactive whatever the users
// hold, and their holdings need no lookup.
func issuing(c *quan.Chunk, t *quan.Template) bool {
	return t.Status == quan.TemplateActive && !c.Now.Before(t.IssueStart) && c.Now.Before(t.IssueEnd)
}

// userSeq names a coupon to create: a user and a receive sequence.
type userSeq struct{ user, seq int64 }

// appendCouponInsert appends to b a multi-row INSERT into table (coupons,
// or a table like it) of one coupon per userSeq, each row "(user, seq"
// and tail, which couponTail formats.
//
// The rows are written as SQL literals rather than bound: the chunk's
// coupons differ only in user and seq, both integers, and the rest, the
// same for every row, is formatted once per chunk. The driver would
// otherwise interpolate twelve arguments a row, scanning the query for
// each placeholder.
func appendCouponInsert(b []byte, table string, rows []userSeq, tail []byte) []byte {
	b = append(b, "INSERT INTO "...)
	b = append(b, table...)
	b = append(b, ` (user_id, seq, template_id, shop_no, status,
	valid_start, valid_end, source, task_id, order_id, created_at, updated_at) VALUES `...)
	for i, c := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '(')
		b = strconv.AppendInt(b, c.user, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, c.seq, 10)
		b = append(b, tail...)
	}
	return b
}

// couponTail formats the columns after user and seq of proto, in
// appendCouponInsert's order: as SQL literals with the closing
// parenthesis, or, for load, as LOAD DATA's tab-separated text with the
// line's end.
func couponTail(proto *quan.Coupon, load bool) ([]byte, error) {
	sep, null, end := byte(','), "NULL", byte(')')
	if load {
		sep, null, end = '\t', `\N`, '\n'
	}
	var b []byte
	word := func(w string) error {
		// Letters, digits, '_' and '-' need no escaping under any
		// sql_mode, nor in LOAD DATA's text.
		for _, r := range w {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
				return fmt.Errorf("insert coupons: %q is not a word the store writes literally", w)
			}
		}
		b = append(b, sep)
		if !load {
			b = append(b, '\'')
		}
		b = append(b, w...)
		if !load {
			b = append(b, '\'')
		}
		return nil
	}
	times := func(ts ...time.Time) {
		for _, t := range ts {
			b = append(b, sep)
			if load {
				b = appendLoadTime(b, t)
			} else {
				b = appendTime(b, t)
			}
		}
	}
	b = append(b, sep)
	b = strconv.AppendInt(b, proto.TemplateID, 10)
	b = append(b, sep)
	b = strconv.AppendInt(b, proto.ShopNo, 10)
	if err := word(string(proto.Status)); err != nil {
		return nil, err
	}
	times(proto.ValidStart, proto.ValidEnd)
	if err := word(string(proto.Source)); err != nil {
		return nil, err
	}
	b = append(b, sep)
	if proto.TaskID != 0 {
		b = strconv.AppendInt(b, proto.TaskID, 10)
	} else {
		b = append(b, null...)
	}
	if proto.OrderID != "" {
		if err := word(proto.OrderID); err != nil {
			return nil, err
		}
	} else {
		b = append(b, sep)
		b = append(b, null...)
	}
	times(proto.CreatedAt, proto.UpdatedAt)
	return append(b, end), nil
}

// appendTime appends t in UTC as a DATETIME(6) literal.
func appendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, `'2006-01-02 15:04:05.000000'`)
}

// heldCounts adds to held how many coupons of template each of users
// holds, leaving out the users who hold none: a search of the (user,
// template, seq) index per user, which also holds the columns the query
// reads, heldBatch users a query. The ids are integers, written as
// literals.
//
// The index is forced and the lists kept short because the optimizer
// plans with the table's statistics, which InnoDB recomputes in the
// background, at most every 10 s, once a tenth of the rows changed: while
// a distribution fills a new table they say it holds a few thousand rows
// when it holds hundreds of thousands. MariaDB turns an IN list of 1,000
// values or more into a join with a derived table, and with such figures
// planned it as a scan of the whole index probing the list: two
// workers' chunks then read the index 100 million times for a million
// users, 36 s instead of 10.
func heldCounts(ctx context.Context, tx *sql.Tx, template int64, users []int64, held map[int64]int64) error {
	var b []byte
	for len(users) > 0 {
		batch := users[:min(len(users), heldBatch)]
		users = users[len(batch):]
		b = usersOfTemplate(append(b[:0], `SELECT user_id, count(*) FROM coupons`...), template, batch)
		b = append(b, ` GROUP BY user_id`...)
		hs, err := sqlrow.Query(ctx, tx, "count the users' coupons", sqlrow.ScanHolding, string(b))
		if err != nil {
			return err
		}
		for _, h := range hs {
			held[h.UserID] = h.Count
		}
	}
	return nil
}

// usersOfTemplate appends to a query of coupons the index and the
// condition that read the coupons of template that users hold (see
// heldCounts), the ids as literals.
func usersOfTemplate(b []byte, template int64, users []int64) []byte {
	b = append(b, ` FORCE INDEX (coupons_user_template_seq) WHERE template_id = `...)
	b = strconv.AppendInt(b, template, 10)
	b = append(b, ` AND user_id IN (`...)
	for i, u := range users {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, u, 10)
	}
	return append(b, ')')
}

// insertFailures records every failed row of c, as sqlrow.ChunkFailures
// gives them. A duplicate key, a
// line recorded twice, which the chunk ledger rules out, is a conflict.
func insertFailures(ctx context.Context, tx *sql.Tx, c *quan.Chunk) error {
	for part := range slices.Chunk(sqlrow.ChunkFailures(c), batchRows) {
		var b strings.Builder
		b.WriteString(`INSERT INTO task_failures (task_id, line, raw, cause) VALUES `)
		args := make([]any, 0, 4*len(part))
		for i, f := range part {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`(?, ?, ?, ?)`)
			args = append(args, c.TaskID, f.Line, f.Raw, string(f.Cause))
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record failed rows: %w", translate(err))
		}
	}
	return nil
}

// chunkEvents records in tx the events of the coupons the chunk c of
// template issued: the coupons of its issued users (distinct, as the
// runner refuses repeats) of the template and task created at c.Now,
// along the (user, template, seq) index, up to 500 users a statement
// (below in_predicate_conversion_threshold).
func chunkEvents(ctx context.Context, tx *sql.Tx, c *quan.Chunk, template int64) error {
	users := quan.IssuedUsers(c)
	slices.Sort(users)
	for part := range slices.Chunk(users, 500) {
		args := append(sqlrow.Args(nil, part)[1:], template, c.TaskID, utc(c.Now))
		if _, err := tx.ExecContext(ctx, sqlrow.IssuedEventsSQL+`user_id IN (`+sqlrow.Params(len(part))+`)
			AND template_id = ? AND task_id = ? AND created_at = ?`, args...); err != nil {
			return fmt.Errorf("record the events of %d coupons: %w", len(part), translate(err))
		}
	}
	return nil
}
