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

var (
	_ quan.TaskStore   = (*Store)(nil)
	_ quan.CouponStore = (*Store)(nil)
)

// taskColumns is the column list of every task SELECT, in sqlrow.ScanTask's
// order.
const taskColumns = `id, shop_no, template_id, name, file_name, file_path, file_size,
	file_sha256, sheet, notify, send_at, dry_run, chunk_size, status, reason,
	count_rows, count_valid, count_issued, count_canceled,
	failed_invalid_id, failed_inexact_number, failed_duplicate,
	failed_limit_reached, failed_out_of_stock, failed_template_inactive,
	chunks_done, chunks_total, bytes_read, bytes_total, report_path, created_by,
	created_at, started_at, finished_at, updated_at, owner, lease_until, retry_of, trace_parent, segment,
	failed_not_eligible, count_blank, stalled_code, stalled_backend, stalled_reason, stalled_since`

// CreateTask stores t and sets t.ID. t.ID is left alone if anything fails.
// The store checks no rule of its own: callers validate t first.
func (s *Store) CreateTask(ctx context.Context, t *quan.Task) (err error) {
	defer s.db.unavailable(&err)
	var id int64
	err = s.db.write.QueryRowContext(ctx, `
		INSERT INTO tasks (
			shop_no, template_id, name, file_name, file_path, file_size,
			file_sha256, sheet, notify, send_at, dry_run, chunk_size, status, reason,
			count_rows, count_valid, count_issued, count_canceled,
			failed_invalid_id, failed_inexact_number, failed_duplicate,
			failed_limit_reached, failed_out_of_stock, failed_template_inactive,
			chunks_done, chunks_total, bytes_read, bytes_total, report_path, created_by,
			created_at, started_at, finished_at, updated_at, owner, lease_until, retry_of, trace_parent, segment,
			failed_not_eligible, count_blank, stalled_code, stalled_backend, stalled_reason, stalled_since
		) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
			?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		append([]any{t.ShopNo}, sqlrow.TaskValues(t, micros)...)...,
	).Scan(&id)
	if err != nil {
		return fmt.Errorf("create task: %w", translate(err))
	}
	t.ID = id
	return nil
}

// Task returns task id of shop (any shop for quan.AnyShop), or
// quan.ErrNotFound.
func (s *Store) Task(ctx context.Context, shop, id int64) (_ *quan.Task, err error) {
	defer s.db.unavailable(&err)
	return queryTask(ctx, s.db.read, shop, id)
}

func queryTask(ctx context.Context, q rowQueryer, shop, id int64) (*quan.Task, error) {
	query, args := sqlrow.OfShop(`SELECT `+taskColumns+` FROM tasks WHERE id = ?`, id, shop)
	return sqlrow.One(q.QueryRowContext(ctx, query, args...), "task", id, sqlrow.ScanTask)
}

// Tasks returns one page of the tasks of f.ShopNo (every shop for
// quan.AnyShop), newest (highest id) first, and the number of all matches.
// A Limit of 0 means quan.DefaultPageSize, and one above quan.MaxPageSize
// is cut to it.
func (s *Store) Tasks(ctx context.Context, f quan.TaskFilter) (_ []*quan.Task, _ int, err error) {
	defer s.db.unavailable(&err)
	var w sqlrow.Where
	w.If(f.ShopNo != quan.AnyShop, `shop_no = ?`, f.ShopNo)
	w.If(f.Status != "", `status = ?`, f.Status)
	return sqlrow.Page(ctx, s.db.read, "tasks", "tasks", taskColumns, w, f.Offset, f.Limit, sqlrow.ScanTask)
}

// UpdateTask loads task id of shop inside a write transaction, which holds
// SQLite's write lock until COMMIT, and calls fn with it. If fn returns nil
// the task is saved and returned; if fn fails nothing is written and its
// error is returned as it is. quan.ErrNotFound if there is no such task.
//
// fn runs under the database's only write lock: it must be quick and must
// not call the store. It must not change ID or ShopNo.
func (s *Store) UpdateTask(ctx context.Context, shop, id int64, fn func(*quan.Task) error) (_ *quan.Task, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("update task %d: %w", id, err)
	}
	defer tx.Rollback()

	t, err := queryTask(ctx, tx, shop, id)
	if err != nil {
		return nil, err
	}
	shopNo, old := t.ShopNo, t.Status
	if err := fn(t); err != nil {
		return nil, err
	}
	if t.ID != id || t.ShopNo != shopNo {
		return nil, fmt.Errorf("update task %d: the update changed the id or the shop, which are fixed", id)
	}
	if err := saveTask(ctx, tx, t); err != nil {
		return nil, fmt.Errorf("update task %d: %w", id, err)
	}
	e, err := quan.TaskEvent(old, t)
	if err != nil {
		return nil, fmt.Errorf("update task %d: %w", id, err)
	}
	if err := sqlrow.RecordEvent(ctx, tx, e, micros(t.UpdatedAt)); err != nil {
		return nil, fmt.Errorf("update task %d: %w", id, translate(err))
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
func (s *Store) ClaimTask(ctx context.Context, owner string, now, lease time.Time) (_ *quan.Task, err error) {
	defer s.db.unavailable(&err)
	if owner == "" {
		return nil, fmt.Errorf("claim task: %w", quan.Errorf(quan.EINVALID, "a runner needs a name to hold a task"))
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim task: %w", err)
	}
	defer tx.Rollback()

	t, err := sqlrow.ScanTask(tx.QueryRowContext(ctx, claimSQL, micros(now), quan.TaskPending, quan.TaskRunning))
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
		owner = ?, lease_until = ?, retry_of = ?, trace_parent = ?, segment = ?,
		failed_not_eligible = ?, count_blank = ?, stalled_code = ?, stalled_backend = ?, stalled_reason = ?, stalled_since = ?
		WHERE id = ?`,
		append(sqlrow.TaskValues(t, micros), t.ID)...,
	); err != nil {
		return translate(err)
	}
	return nil
}

// Failures returns up to limit failed rows of task id with a line after
// afterLine, in line order: a page of the primary key, however far into
// the task it starts. A limit below 1 returns none.
func (s *Store) Failures(ctx context.Context, taskID, afterLine int64, limit int) (_ []quan.Failure, err error) {
	defer s.db.unavailable(&err)
	if limit < 1 {
		return []quan.Failure{}, nil
	}
	return sqlrow.Query(ctx, s.db.read, fmt.Sprintf("failures of task %d", taskID), sqlrow.ScanFailure, `
		SELECT line, raw, cause FROM task_failures
		WHERE task_id = ? AND line > ? ORDER BY line LIMIT ?`, taskID, afterLine, limit)
}
