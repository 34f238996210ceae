package sqlite

import (
	"context"
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

func (s *Store) monitor() sqlrow.Monitor {
	return sqlrow.Monitor{DB: s.db.read, ByStatusSQL: taskStatusesSQL, OldestRunningSQL: oldestRunningSQL, OldestAvailableSQL: oldestAvailableSQL}
}

// TaskStatuses implements quan.MonitorStore.
func (s *Store) TaskStatuses(ctx context.Context) (_ map[quan.TaskStatus]int64, err error) {
	defer s.db.unavailable(&err)
	return s.monitor().TaskStatuses(ctx)
}

// OldestRunningTask implements quan.MonitorStore.
func (s *Store) OldestRunningTask(ctx context.Context) (_ time.Time, err error) {
	defer s.db.unavailable(&err)
	return s.monitor().OldestRunningTask(ctx)
}

// OldestAvailableEnd implements quan.MonitorStore.
func (s *Store) OldestAvailableEnd(ctx context.Context) (_ time.Time, err error) {
	defer s.db.unavailable(&err)
	return s.monitor().OldestAvailableEnd(ctx)
}

// StoreRetries is always 0: the one writer connection begins IMMEDIATE,
// so writers queue in database/sql and never retry (another process on
// the file is waited for by busy_timeout, inside SQLite).
func (s *Store) StoreRetries() int64 { return 0 }
