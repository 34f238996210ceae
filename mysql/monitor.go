package mysql

import (
	"context"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.MonitorStore = (*Store)(nil)

// The queries of a scrape, each along an index: tasks_status_send_at for
// the tasks by status and the running tasks (few), and
// coupons_status_valid_end, whose first entry for available coupons
// answers the MIN ("Select tables optimized away").
const (
	taskStatusesSQL    = `SELECT status, COUNT(*) FROM tasks GROUP BY status`
	oldestRunningSQL   = `SELECT MIN(updated_at) FROM tasks WHERE status = ?`
	oldestAvailableSQL = `SELECT MIN(valid_end) FROM coupons WHERE status = 'available'`
)

// TaskStatuses counts the tasks by status along tasks_status_send_at.
func (s *Store) TaskStatuses(ctx context.Context) (map[quan.TaskStatus]int64, error) {
	rows, err := s.db.db.QueryContext(ctx, taskStatusesSQL)
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
	err := s.db.db.QueryRowContext(ctx, oldestRunningSQL, quan.TaskRunning).
		Scan(sqlrow.NullTime(&t))
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest running task: %w", err)
	}
	return t, nil
}

// OldestAvailableEnd reads the first entry of coupons_status_valid_end
// for available coupons.
func (s *Store) OldestAvailableEnd(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.db.db.QueryRowContext(ctx, oldestAvailableSQL).
		Scan(sqlrow.NullTime(&t))
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest available coupon: %w", err)
	}
	return t, nil
}

// StoreRetries counts the transactions inTx ran again, the chunks applied
// again the locked way, the swaps of coupons that met a lock (the locked
// way decides them) and the sweeps that raced another sweeper.
func (s *Store) StoreRetries() int64 { return s.db.retries.Load() }
