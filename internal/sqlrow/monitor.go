package sqlrow

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/quanhq/quan"
)

// Monitor answers quan.MonitorStore's reads for both stores, each store
// giving its own statements (three queries in the order of the fields)
// and the connection pool its reads use.
type Monitor struct {
	DB *sql.DB
	// ByStatusSQL selects (status, count) rows; OldestRunningSQL the MIN
	// of updated_at of the tasks of status ?; OldestAvailableSQL the MIN
	// of valid_end of the available coupons.
	ByStatusSQL, OldestRunningSQL, OldestAvailableSQL string
}

// TaskStatuses counts the tasks by status.
func (m Monitor) TaskStatuses(ctx context.Context) (map[quan.TaskStatus]int64, error) {
	type count struct {
		st quan.TaskStatus
		n  int64
	}
	rows, err := Query(ctx, m.DB, "count tasks by status", func(row Scanner) (c count, err error) {
		err = row.Scan(&c.st, &c.n)
		return c, err
	}, m.ByStatusSQL)
	if err != nil {
		return nil, err
	}
	out := make(map[quan.TaskStatus]int64, len(rows))
	for _, c := range rows {
		out[c.st] = c.n
	}
	return out, nil
}

// OldestRunningTask reads the earliest UpdatedAt of the running tasks.
func (m Monitor) OldestRunningTask(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := m.DB.QueryRowContext(ctx, m.OldestRunningSQL, quan.TaskRunning).Scan(NullTime(&t)); err != nil {
		return time.Time{}, fmt.Errorf("oldest running task: %w", err)
	}
	return t, nil
}

// OldestAvailableEnd reads the earliest ValidEnd of the available coupons.
func (m Monitor) OldestAvailableEnd(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := m.DB.QueryRowContext(ctx, m.OldestAvailableSQL).Scan(NullTime(&t)); err != nil {
		return time.Time{}, fmt.Errorf("oldest available coupon: %w", err)
	}
	return t, nil
}
