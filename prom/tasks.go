package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// Distribution collects a distribution runner's counters: rows and chunks
// it applied, and the task leases it lost.
func Distribution(c *quan.DistributionCounters) prometheus.Collector { return distCollector{c} }

var (
	taskRowsDesc = prometheus.NewDesc("quan_task_rows_total",
		"Rows of distribution files decided by the chunks this process applied, by outcome: issued, or the cause of a row without a coupon.",
		[]string{"outcome"}, nil)
	taskChunksDesc = prometheus.NewDesc("quan_task_chunks_total",
		"Chunks of distribution tasks this process handled, by result: applied, redelivered (a delivery again, or a chunk applied before), failed (handling returned an error and the chunk goes again).",
		[]string{"result"}, nil)
	// lockContentionHelp is the help of quan_lock_contention_total, which
	// two collectors share, each with its own lock label.
	lockContentionHelp = "Waits and retries on locks, by lock: task_lease (a runner lost a task's lease to another), store_retry (the store ran a transaction again after a deadlock, a lock wait timeout or a concurrent change)."
	taskLeaseDesc      = prometheus.NewDesc("quan_lock_contention_total", lockContentionHelp, nil, prometheus.Labels{"lock": "task_lease"})
)

// distCollector reads a tasks.Runner's counters at each scrape.
type distCollector struct{ c *quan.DistributionCounters }

func (distCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- taskRowsDesc
	ch <- taskChunksDesc
	ch <- taskLeaseDesc
}

func (k distCollector) Collect(ch chan<- prometheus.Metric) {
	c := k.c
	for _, o := range quan.RowOutcomes() {
		counter(ch, taskRowsDesc, c.Rows(o), o)
	}
	counter(ch, taskChunksDesc, c.ChunksApplied.Load(), "applied")
	counter(ch, taskChunksDesc, c.ChunksRedelivered.Load(), "redelivered")
	counter(ch, taskChunksDesc, c.ChunksFailed.Load(), "failed")
	counter(ch, taskLeaseDesc, c.LeasesLost.Load())
}
