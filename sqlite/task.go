package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

var (
	_ quan.TaskStore   = (*Store)(nil)
	_ quan.CouponStore = (*Store)(nil)
)

// taskColumns is the column list of every task SELECT, in scanTask's order.
const taskColumns = `id, shop_no, template_id, name, file_name, file_path, file_size,
	file_sha256, sheet, notify, send_at, dry_run, chunk_size, status, reason,
	count_rows, count_valid, count_issued, count_canceled,
	failed_invalid_id, failed_inexact_number, failed_duplicate,
	failed_limit_reached, failed_out_of_stock, failed_template_inactive,
	chunks_done, chunks_total, bytes_read, bytes_total, report_path, created_by,
	created_at, started_at, finished_at, updated_at, owner, lease_until`

// CreateTask stores t and sets t.ID. t.ID is left alone if anything fails.
// The store checks no rule of its own: callers validate t first.
func (s *Store) CreateTask(ctx context.Context, t *quan.Task) error {
	var id int64
	c, f := t.Counts, t.Counts.Failed
	err := s.db.write.QueryRowContext(ctx, `
		INSERT INTO tasks (
			shop_no, template_id, name, file_name, file_path, file_size,
			file_sha256, sheet, notify, send_at, dry_run, chunk_size, status, reason,
			count_rows, count_valid, count_issued, count_canceled,
			failed_invalid_id, failed_inexact_number, failed_duplicate,
			failed_limit_reached, failed_out_of_stock, failed_template_inactive,
			chunks_done, chunks_total, bytes_read, bytes_total, report_path, created_by,
			created_at, started_at, finished_at, updated_at, owner, lease_until
		) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
			?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		t.ShopNo, t.TemplateID, t.Name, t.FileName, t.FilePath, t.FileSize,
		t.FileSHA256, t.Sheet, encodeNotify(t.Notify), nullMicros(t.SendAt), t.DryRun, t.ChunkSize, t.Status, t.Reason,
		c.Rows, c.Valid, c.Issued, c.Canceled,
		f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive,
		t.ChunksDone, t.ChunksTotal, t.BytesRead, t.BytesTotal, t.ReportPath, t.CreatedBy,
		micros(t.CreatedAt), nullMicros(t.StartedAt), nullMicros(t.FinishedAt), micros(t.UpdatedAt),
		t.Owner, nullMicros(t.LeaseUntil),
	).Scan(&id)
	if err != nil {
		return fmt.Errorf("create task: %w", translate(err))
	}
	t.ID = id
	return nil
}

// Task returns task id of shop (any shop for quan.AnyShop), or
// quan.ErrNotFound.
func (s *Store) Task(ctx context.Context, shop, id int64) (*quan.Task, error) {
	return queryTask(ctx, s.db.read, shop, id)
}

func queryTask(ctx context.Context, q rowQueryer, shop, id int64) (*quan.Task, error) {
	query := `SELECT ` + taskColumns + ` FROM tasks WHERE id = ?`
	args := []any{id}
	if shop != quan.AnyShop {
		query += ` AND shop_no = ?`
		args = append(args, shop)
	}
	t, err := scanTask(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task %d: %w", id, quan.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read task %d: %w", id, err)
	}
	return t, nil
}

// Tasks returns one page of the tasks of f.ShopNo (every shop for
// quan.AnyShop), newest (highest id) first, and the number of all matches.
// A Limit of 0 means quan.DefaultPageSize, and one above quan.MaxPageSize
// is cut to it.
func (s *Store) Tasks(ctx context.Context, f quan.TaskFilter) ([]*quan.Task, int, error) {
	var conds []string
	var args []any
	if f.ShopNo != quan.AnyShop {
		conds, args = append(conds, `shop_no = ?`), append(args, f.ShopNo)
	}
	if f.Status != "" {
		conds, args = append(conds, `status = ?`), append(args, f.Status)
	}
	return listPage(ctx, s.db.read, "tasks", "tasks", taskColumns, conds, args, f.Offset, f.Limit, scanTask)
}

// UpdateTask loads task id of shop inside a write transaction, which holds
// SQLite's write lock until COMMIT, and calls fn with it. If fn returns nil
// the task is saved and returned; if fn fails nothing is written and its
// error is returned as it is. quan.ErrNotFound if there is no such task.
//
// fn runs under the database's only write lock: it must be quick and must
// not call the store. It must not change ID or ShopNo.
func (s *Store) UpdateTask(ctx context.Context, shop, id int64, fn func(*quan.Task) error) (*quan.Task, error) {
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("update task %d: %w", id, err)
	}
	defer tx.Rollback()

	t, err := queryTask(ctx, tx, shop, id)
	if err != nil {
		return nil, err
	}
	shopNo := t.ShopNo
	if err := fn(t); err != nil {
		return nil, err
	}
	if t.ID != id || t.ShopNo != shopNo {
		return nil, fmt.Errorf("update task %d: the update changed the id or the shop, which are fixed", id)
	}
	if err := saveTask(ctx, tx, t); err != nil {
		return nil, fmt.Errorf("update task %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("update task %d: commit: %w", id, translate(err))
	}
	return t, nil
}

// ClaimTask gives owner the lease of the oldest (lowest id) task that needs
// a runner: a pending task whose send time has come, which becomes running
// with StartedAt now, or a running task whose lease ended at or before now,
// which keeps its StartedAt and the chunks applied. It returns nil, nil when no
// task needs a runner.
func (s *Store) ClaimTask(ctx context.Context, owner string, now, lease time.Time) (*quan.Task, error) {
	if owner == "" {
		return nil, fmt.Errorf("claim task: %w", quan.Errorf(quan.EINVALID, "a runner needs a name to hold a task"))
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim task: %w", err)
	}
	defer tx.Rollback()

	t, err := scanTask(tx.QueryRowContext(ctx, claimSQL, micros(now), quan.TaskPending, quan.TaskRunning))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim task: %w", err)
	}
	if t.Status == quan.TaskPending {
		if err := t.Start(now); err != nil {
			return nil, fmt.Errorf("claim task %d: %w", t.ID, err)
		}
	}
	t.Owner, t.LeaseUntil, t.UpdatedAt = owner, lease, now
	if err := saveTask(ctx, tx, t); err != nil {
		return nil, fmt.Errorf("claim task %d: %w", t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim task %d: commit: %w", t.ID, translate(err))
	}
	return t, nil
}

// claimSQL selects the task ClaimTask gives out. Both arms search
// tasks_status_send_at: the pending tasks due, and the running tasks, few,
// whose leases are then checked row by row. Finished tasks, the bulk of
// the table, are never read.
const claimSQL = `SELECT ` + taskColumns + ` FROM tasks
	WHERE (status = ?2 AND (send_at IS NULL OR send_at <= ?1))
	   OR (status = ?3 AND (lease_until IS NULL OR lease_until <= ?1))
	ORDER BY id LIMIT 1`

// saveTask writes every column of t but its id and shop.
func saveTask(ctx context.Context, tx *sql.Tx, t *quan.Task) error {
	c, f := t.Counts, t.Counts.Failed
	if _, err := tx.ExecContext(ctx, `
		UPDATE tasks SET
			template_id = ?, name = ?, file_name = ?, file_path = ?, file_size = ?,
			file_sha256 = ?, sheet = ?, notify = ?, send_at = ?, dry_run = ?, chunk_size = ?,
			status = ?, reason = ?,
			count_rows = ?, count_valid = ?, count_issued = ?, count_canceled = ?,
			failed_invalid_id = ?, failed_inexact_number = ?, failed_duplicate = ?,
			failed_limit_reached = ?, failed_out_of_stock = ?, failed_template_inactive = ?,
			chunks_done = ?, chunks_total = ?, bytes_read = ?, bytes_total = ?, report_path = ?, created_by = ?,
			created_at = ?, started_at = ?, finished_at = ?, updated_at = ?,
			owner = ?, lease_until = ?
		WHERE id = ?`,
		t.TemplateID, t.Name, t.FileName, t.FilePath, t.FileSize,
		t.FileSHA256, t.Sheet, encodeNotify(t.Notify), nullMicros(t.SendAt), t.DryRun, t.ChunkSize,
		t.Status, t.Reason,
		c.Rows, c.Valid, c.Issued, c.Canceled,
		f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive,
		t.ChunksDone, t.ChunksTotal, t.BytesRead, t.BytesTotal, t.ReportPath, t.CreatedBy,
		micros(t.CreatedAt), nullMicros(t.StartedAt), nullMicros(t.FinishedAt), micros(t.UpdatedAt),
		t.Owner, nullMicros(t.LeaseUntil),
		t.ID,
	); err != nil {
		return translate(err)
	}
	return nil
}

// Failures returns up to limit failed rows of task id with a line after
// afterLine, in line order: a page of the primary key, however far into
// the task it starts. A limit below 1 returns none.
func (s *Store) Failures(ctx context.Context, taskID, afterLine int64, limit int) ([]quan.Failure, error) {
	fs := []quan.Failure{}
	if limit < 1 {
		return fs, nil
	}
	rows, err := s.db.read.QueryContext(ctx, `
		SELECT line, raw, cause FROM task_failures
		WHERE task_id = ? AND line > ? ORDER BY line LIMIT ?`, taskID, afterLine, limit)
	if err != nil {
		return nil, fmt.Errorf("failures of task %d: %w", taskID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var f quan.Failure
		if err := rows.Scan(&f.Line, &f.Raw, &f.Cause); err != nil {
			return nil, fmt.Errorf("failures of task %d: %w", taskID, err)
		}
		fs = append(fs, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("failures of task %d: %w", taskID, err)
	}
	return fs, nil
}

// scanTask reads a row of taskColumns.
func scanTask(row interface{ Scan(...any) error }) (*quan.Task, error) {
	var (
		t                                        quan.Task
		notify                                   string
		createdAt, updatedAt                     int64
		sendAt, startedAt, finishedAt, leaseTime sql.NullInt64
	)
	c, f := &t.Counts, &t.Counts.Failed
	if err := row.Scan(&t.ID, &t.ShopNo, &t.TemplateID, &t.Name, &t.FileName, &t.FilePath, &t.FileSize,
		&t.FileSHA256, &t.Sheet, &notify, &sendAt, &t.DryRun, &t.ChunkSize, &t.Status, &t.Reason,
		&c.Rows, &c.Valid, &c.Issued, &c.Canceled,
		&f.InvalidID, &f.InexactNumber, &f.Duplicate, &f.LimitReached, &f.OutOfStock, &f.TemplateInactive,
		&t.ChunksDone, &t.ChunksTotal, &t.BytesRead, &t.BytesTotal, &t.ReportPath, &t.CreatedBy,
		&createdAt, &startedAt, &finishedAt, &updatedAt, &t.Owner, &leaseTime,
	); err != nil {
		return nil, err
	}
	var err error
	if t.Notify, err = quan.ParseNotifyTypes(notify); err != nil {
		return nil, fmt.Errorf("task %d: notify: %w", t.ID, err)
	}
	t.SendAt = fromNullMicros(sendAt)
	t.CreatedAt, t.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	t.StartedAt, t.FinishedAt = fromNullMicros(startedAt), fromNullMicros(finishedAt)
	t.LeaseUntil = fromNullMicros(leaseTime)
	return &t, nil
}

// encodeNotify stores notification channels as a comma list, the form
// quan.ParseNotifyTypes reads back.
func encodeNotify(ns []quan.NotifyType) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = string(n)
	}
	return strings.Join(s, ",")
}
