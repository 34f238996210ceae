package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// Reconcile collects the reconciler's counters and the gauges of its last
// run.
func Reconcile(c *quan.ReconcileCounters) prometheus.Collector { return reconcileCollector{c} }

var (
	stockDriftDesc = prometheus.NewDesc("quan_stock_drift",
		"Sum over active templates of |cache stock - store stock| the last reconciliation found (before repair); work in flight is not drift.", nil, nil)
	driftTemplatesDesc = prometheus.NewDesc("quan_stock_drift_templates",
		"Templates whose cache drifted from the store in the last reconciliation.", nil, nil)
	holdingDriftDesc = prometheus.NewDesc("quan_holding_drift_users",
		"Users whose cached holding, or count of today or this week (the period limits), differed from the store's in the last reconciliation.", nil, nil)
	reconcileRunsDesc = prometheus.NewDesc("quan_reconcile_runs_total",
		"Reconciliations of the cache with the store, by result: ok, or error (a template could not be read or repaired).",
		[]string{"result"}, nil)
	reconcileRepairsDesc = prometheus.NewDesc("quan_reconcile_repairs_total",
		"Templates whose cache was repaired from the store.", nil, nil)
)

// reconcileCollector reads a Reconciler's counters at each scrape.
type reconcileCollector struct{ c *quan.ReconcileCounters }

func (reconcileCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stockDriftDesc, driftTemplatesDesc, holdingDriftDesc, reconcileRunsDesc, reconcileRepairsDesc} {
		ch <- d
	}
}

func (k reconcileCollector) Collect(ch chan<- prometheus.Metric) {
	c := k.c
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(stockDriftDesc, c.StockDrift.Load())
	gauge(driftTemplatesDesc, c.DriftTemplates.Load())
	gauge(holdingDriftDesc, c.HeldDriftUsers.Load())
	counter(reconcileRunsDesc, c.RunsOK.Load(), "ok")
	counter(reconcileRunsDesc, c.RunsFailed.Load(), "error")
	counter(reconcileRepairsDesc, c.Repairs.Load())
}
