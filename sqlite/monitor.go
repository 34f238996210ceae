package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.MonitorStore = (*Store)(nil)

// The queries of a scrape, each along an index (plan_test.go): the
// tasks by status, the running tasks (few), and the first entry of the
// available coupons by valid end.
const (
	taskStatusesSQL    = `SELECT status, COUNT(*) FROM tasks GROUP BY status`
	oldestRunningSQL   = `SELECT MIN(updated_at) FROM tasks WHERE status = ?`
	oldestAvailableSQL = `SELECT MIN(valid_end) FROM coupons WHERE status = 'available'`
)

// TaskStatuses counts the tasks by status along tasks_status_send_at.
func (s *Store) TaskStatuses(ctx context.Context) (map[quan.TaskStatus]int64, error) {
	rows, err := s.db.read.QueryContext(ctx, taskStatusesSQL)
	if err != nil {
		return nil, fmt.Errorf("count tasks by status: %w", err)
	}
	defer rows.Close()
	out := map[quan.TaskStatus]int64{}
	for rows.Next() {
		var (
			st quan.TaskStatus
			n  int64
		)
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count tasks by status: %w", err)
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count tasks by status: %w", err)
	}
	return out, nil
}

// OldestRunningTask reads the running tasks, few, along
// tasks_status_send_at.
func (s *Store) OldestRunningTask(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.db.read.QueryRowContext(ctx, oldestRunningSQL, quan.TaskRunning).
		Scan(sqlrow.NullTime(&t))
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest running task: %w", err)
	}
	return t, nil
}

// OldestAvailableEnd reads the first entry of the partial index
// coupons_available_valid_end.
func (s *Store) OldestAvailableEnd(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.db.read.QueryRowContext(ctx, oldestAvailableSQL).
		Scan(sqlrow.NullTime(&t))
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest available coupon: %w", err)
	}
	return t, nil
}

// StoreRetries is always 0: the one writer connection begins IMMEDIATE,
// so writers queue in database/sql and never retry (another process on
// the file is waited for by busy_timeout, inside SQLite).
func (s *Store) StoreRetries() int64 { return 0 }
