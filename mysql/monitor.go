package mysql

import (
	"context"
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

func (s *Store) monitor() sqlrow.Monitor {
	return sqlrow.Monitor{DB: s.db.db, ByStatusSQL: taskStatusesSQL, OldestRunningSQL: oldestRunningSQL, OldestAvailableSQL: oldestAvailableSQL}
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

// StoreRetries counts the transactions inTx ran again, the chunks applied
// again the locked way, the swaps of coupons that met a lock (the locked
// way decides them) and the sweeps that raced another sweeper.
func (s *Store) StoreRetries() int64 { return s.db.retries.Load() }
