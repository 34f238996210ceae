package prom

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// Monitor collects what the store tells of the whole system at each
// scrape: tasks by status, how long the oldest running task has made no
// progress, how late the oldest coupon still available past its window
// is, and the store's retries. now is the clock those ages are measured
// by (nil: time.Now). Every process on one store reports the same gauges:
// aggregate them with max, not sum.
func Monitor(m quan.MonitorStore, now quan.Clock) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	return storeCollector{m, now}
}

var (
	tasksDesc = prometheus.NewDesc("quan_tasks",
		"Distribution tasks in the store, by status (read at each scrape).",
		[]string{"status"}, nil)
	taskStalledDesc = prometheus.NewDesc("quan_task_stalled_seconds",
		"How long the running task that progressed least lately has gone without a chunk applied: now minus the oldest last change among running tasks; 0 if none runs (read at each scrape).",
		nil, nil)
	expiryLagDesc = prometheus.NewDesc("quan_coupon_expiry_lag_seconds",
		"How late the expiry of the oldest coupon still available past the end of its window is; 0 if none (read at each scrape).",
		nil, nil)
	storeRetryDesc = prometheus.NewDesc("quan_lock_contention_total", lockContentionHelp, nil, prometheus.Labels{"lock": "store_retry"})
)

// taskStatuses are the statuses quan_tasks always shows, 0 or not.
var taskStatuses = []quan.TaskStatus{quan.TaskPending, quan.TaskRunning, quan.TaskSucceeded, quan.TaskFailed, quan.TaskCanceled}

type storeCollector struct {
	m   quan.MonitorStore
	now quan.Clock
}

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- taskStalledDesc
	ch <- expiryLagDesc
	ch <- storeRetryDesc
}

// Collect leaves out a gauge the store does not read in time.
func (k storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	now := k.now()
	if byStatus, err := k.m.TaskStatuses(ctx); err == nil {
		for _, st := range taskStatuses {
			gauge(ch, tasksDesc, float64(byStatus[st]), string(st))
		}
		for st, n := range byStatus {
			if !slices.Contains(taskStatuses, st) {
				gauge(ch, tasksDesc, float64(n), string(st)) // a status this version does not know
			}
		}
	}
	if t, err := k.m.OldestRunningTask(ctx); err == nil {
		gauge(ch, taskStalledDesc, age(now, t))
	}
	if t, err := k.m.OldestAvailableEnd(ctx); err == nil {
		gauge(ch, expiryLagDesc, age(now, t))
	}
	counter(ch, storeRetryDesc, k.m.StoreRetries())
}

// age is how long before now t was, in seconds: 0 for the zero time or
// a time to come.
func age(now, t time.Time) float64 {
	if t.IsZero() || !now.After(t) {
		return 0
	}
	return now.Sub(t).Seconds()
}
