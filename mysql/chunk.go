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

	"github.com/quanhq/quan"
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

// ApplyChunk applies c in one READ COMMITTED transaction, as
// quan.TaskStore requires, and returns the chunk's counts. It leaves c
// alone unless it commits; then c.Rows carry the causes the chunk was
// decided with, as quan.PlanChunk sets them. quan.ErrNotFound if there is
// no task c.TaskID. Undecided rows must name distinct users, as the file
// check leaves them (it marks repeats duplicate_in_file); a chunk that
// breaks this is refused as invalid.
//
// The transaction locks the task row (FOR UPDATE), which makes chunks of
// one task and UpdateTask on it take turns, and then the template row,
// which makes every writer of the template's stock and coupons (other
// tasks' chunks, AdjustStock, UpdateTemplate) take turns: the holdings and
// the stock it plans with stay true until it commits. See issueChunk for
// the writes.
func (s *Store) ApplyChunk(ctx context.Context, c *quan.Chunk) (quan.TaskCounts, error) {
	op := fmt.Sprintf("apply chunk %d of task %d", c.Seq, c.TaskID)
	if err := c.Check(); err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	var (
		work quan.Chunk
		n    quan.TaskCounts
	)
	err := s.db.inTx(ctx, func(tx *sql.Tx) error {
		// A retried attempt starts from the rows as the caller gave them.
		work = *c
		work.Rows = slices.Clone(c.Rows)

		var (
			status   string
			template int64
			dryRun   bool
		)
		err := tx.QueryRowContext(ctx,
			`SELECT status, template_id, dry_run FROM tasks WHERE id = ? FOR UPDATE`, c.TaskID,
		).Scan(&status, &template, &dryRun)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %d: %w", c.TaskID, quan.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if quan.TaskStatus(status) != quan.TaskRunning {
			return quan.Errorf(quan.ELEASELOST, "task %d is %s, not running", c.TaskID, status)
		}
		// Under the task's row lock no other chunk of the task is being
		// applied, so the ledger answers for good.
		res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO task_chunks (task_id, seq) VALUES (?, ?)`, c.TaskID, c.Seq)
		if err != nil {
			return fmt.Errorf("record the chunk: %w", translate(err))
		}
		if k, err := res.RowsAffected(); err != nil || k != 1 {
			if err != nil {
				return fmt.Errorf("record the chunk: %w", err)
			}
			return quan.Errorf(quan.ECHUNKAPPLIED, "chunk %d of task %d was applied before", c.Seq, c.TaskID)
		}

		if !dryRun {
			if err := issueChunk(ctx, tx, &work, template); err != nil {
				return err
			}
		}
		n = quan.ChunkCounts(&work, dryRun)
		if err := insertFailures(ctx, tx, &work); err != nil {
			return err
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
				chunks_done = chunks_done + 1, bytes_read = GREATEST(bytes_read, ?), updated_at = ?
			WHERE id = ?`,
			n.Rows, n.Valid, n.Issued, n.Canceled,
			f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive,
			c.BytesRead, utc(c.Now), c.TaskID,
		); err != nil {
			return fmt.Errorf("save the counts: %w", translate(err))
		}
		return nil
	})
	if err != nil {
		return quan.TaskCounts{}, fmt.Errorf("%s: %w", op, err)
	}
	copy(c.Rows, work.Rows)
	return n, nil
}

// AppliedChunks returns the seqs of the chunks of task id applied so far,
// in ascending order: a range of the ledger's primary key.
func (s *Store) AppliedChunks(ctx context.Context, id int64) ([]int64, error) {
	rows, err := s.db.db.QueryContext(ctx, `SELECT seq FROM task_chunks WHERE task_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("applied chunks of task %d: %w", id, err)
	}
	defer rows.Close()
	seqs := []int64{}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, fmt.Errorf("applied chunks of task %d: %w", id, err)
		}
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("applied chunks of task %d: %w", id, err)
	}
	return seqs, nil
}

// issueChunk decides the undecided rows of c with quan.PlanChunk, takes the
// stock and creates the coupons, all in tx, under the template's row lock.
//
// On InnoDB an insert that hits the unique index is not free: the row is
// written to the clustered index first and then removed again, so a
// re-run in which every user holds the coupon already took 11–13 s for a
// million rows against 6 s for the first run. The holdings are therefore
// looked up first, batchRows users a query, a search of the (user,
// template, seq) index each, and only the coupons the plan issues are
// inserted; none of them can hit the index while the template is locked.
// The inserts go in user order, so that each statement walks the user
// index from left to right.
func issueChunk(ctx context.Context, tx *sql.Tx, c *quan.Chunk, templateID int64) error {
	t, err := queryTemplate(ctx, tx, quan.AnyShop, templateID, "FOR UPDATE")
	if err != nil {
		return err
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
			return err
		}
	}
	issues := quan.PlanChunk(c, t, held, t.Stock)
	if len(issues) == 0 {
		return nil
	}

	res, err := tx.ExecContext(ctx,
		`UPDATE templates SET stock = stock - ? WHERE id = ? AND stock >= ?`, len(issues), templateID, len(issues))
	if err != nil {
		return fmt.Errorf("take %d of the stock: %w", len(issues), translate(err))
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("take %d of the stock: the stock read under the lock changed (%d rows, %v)", len(issues), n, err)
	}

	cs := make([]userSeq, len(issues))
	for i, is := range issues {
		cs[i] = userSeq{c.Rows[is.Row].UserID, is.Seq}
	}
	slices.SortFunc(cs, func(a, b userSeq) int { return cmp.Compare(a.user, b.user) })
	proto := quan.NewCoupon(t, 0, 0, c.TaskID, c.Now)
	tail, err := couponTail(&proto)
	if err != nil {
		return err
	}
	var b []byte
	for len(cs) > 0 {
		batch := cs[:min(len(cs), batchRows)]
		cs = cs[len(batch):]
		b = appendCouponInsert(b[:0], "coupons", batch, tail)
		res, err := tx.ExecContext(ctx, string(b))
		if err != nil {
			return fmt.Errorf("insert %d coupons: %w", len(batch), translate(err))
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(batch)) {
			return fmt.Errorf("insert %d coupons: %d inserted (%v)", len(batch), n, err)
		}
	}
	return nil
}

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

// couponTail formats the columns after user and seq of proto, and the
// closing parenthesis, as SQL literals.
func couponTail(proto *quan.Coupon) ([]byte, error) {
	var b []byte
	b = append(b, ',')
	b = strconv.AppendInt(b, proto.TemplateID, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, proto.ShopNo, 10)
	status, err := wordLiteral(string(proto.Status))
	if err != nil {
		return nil, err
	}
	source, err := wordLiteral(string(proto.Source))
	if err != nil {
		return nil, err
	}
	b = append(b, ',')
	b = append(b, status...)
	b = append(b, ',')
	b = appendTime(b, proto.ValidStart)
	b = append(b, ',')
	b = appendTime(b, proto.ValidEnd)
	b = append(b, ',')
	b = append(b, source...)
	b = append(b, ',')
	if proto.TaskID != 0 {
		b = strconv.AppendInt(b, proto.TaskID, 10)
	} else {
		b = append(b, "NULL"...)
	}
	b = append(b, ',')
	if proto.OrderID != "" {
		lit, err := wordLiteral(proto.OrderID)
		if err != nil {
			return nil, err
		}
		b = append(b, lit...)
	} else {
		b = append(b, "NULL"...)
	}
	b = append(b, ',')
	b = appendTime(b, proto.CreatedAt)
	b = append(b, ',')
	b = appendTime(b, proto.UpdatedAt)
	b = append(b, ')')
	return b, nil
}

// wordLiteral quotes w, a domain word such as a status, as an SQL string.
// It refuses anything but letters, digits, '_' and '-', which need no
// escaping under any sql_mode.
func wordLiteral(w string) (string, error) {
	for _, r := range w {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
			return "", fmt.Errorf("insert coupons: %q is not a word the store writes literally", w)
		}
	}
	return "'" + w + "'", nil
}

// appendTime appends t in UTC as a DATETIME(6) literal.
func appendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, `'2006-01-02 15:04:05.000000'`)
}

// heldCounts adds to held how many coupons of template each of users
// holds, leaving out the users who hold none: a search of the (user,
// template, seq) index per user, which also holds the columns the query
// reads, batchRows users a query. The ids are integers, written as
// literals.
func heldCounts(ctx context.Context, tx *sql.Tx, template int64, users []int64, held map[int64]int64) error {
	var b []byte
	for len(users) > 0 {
		batch := users[:min(len(users), batchRows)]
		users = users[len(batch):]
		b = append(b[:0], `SELECT user_id, count(*) FROM coupons WHERE template_id = `...)
		b = strconv.AppendInt(b, template, 10)
		b = append(b, ` AND user_id IN (`...)
		for i, u := range batch {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, u, 10)
		}
		b = append(b, `) GROUP BY user_id`...)
		rows, err := tx.QueryContext(ctx, string(b))
		if err != nil {
			return fmt.Errorf("count the users' coupons: %w", err)
		}
		for rows.Next() {
			var u, k int64
			if err := rows.Scan(&u, &k); err != nil {
				rows.Close()
				return fmt.Errorf("count the users' coupons: %w", err)
			}
			held[u] = k
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("count the users' coupons: %w", err)
		}
	}
	return nil
}

// insertFailures records every failed row of c, with the user id as
// written or, when the row carries no text, as parsed. A duplicate key, a
// line recorded twice, which the chunk ledger rules out, is a conflict.
func insertFailures(ctx context.Context, tx *sql.Tx, c *quan.Chunk) error {
	var args []any
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		var b strings.Builder
		b.WriteString(`INSERT INTO task_failures (task_id, line, raw, cause) VALUES `)
		for i := range rows {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`(?, ?, ?, ?)`)
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record failed rows: %w", translate(err))
		}
		args, rows = args[:0], 0
		return nil
	}
	for _, r := range c.Rows {
		if r.Cause == "" {
			continue
		}
		raw := r.Raw
		if raw == "" && r.UserID > 0 {
			// A runner may keep the text of the rows its file check
			// refused only; a row the plan refused then reports its id.
			raw = strconv.FormatInt(r.UserID, 10)
		}
		args = append(args, c.TaskID, r.Line, raw, string(r.Cause))
		if rows++; rows == batchRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
