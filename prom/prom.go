// Package prom exposes quan's counters as Prometheus metrics
// (github.com/prometheus/client_golang). The counters stay where they are
// counted, as atomics; a scrape reads them, so the hot paths pay nothing
// for metrics but a claim's one histogram observation. Gauges of the
// whole system (tasks by status, the expiry lag) are read from the store
// at each scrape.
package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry of the Go runtime's and the process's
// metrics; the wiring registers each use case's and backend's collectors
// in it as it builds them.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// counter sends a counter of value v.
func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v int64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

// gauge sends a gauge of value v.
func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}
