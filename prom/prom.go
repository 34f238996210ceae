// Package prom exposes quan's counters as Prometheus metrics
// (github.com/prometheus/client_golang). The counters stay where they are
// counted, as atomics; a scrape reads them, so the hot paths pay nothing
// for metrics.
package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/quanhq/quan"
)

// NewRegistry returns a registry of the Go runtime's and the process's
// metrics; the wiring registers each use case's and backend's collectors
// in it as it builds them.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Claims collects a ClaimService's counters.
func Claims(s *quan.ClaimService) prometheus.Collector { return claimCollector{&s.Counters} }

var (
	claimsDesc = prometheus.NewDesc("quan_claims_total",
		"Claims answered by this process, by result: accepted (202), refused (409), rate_limited (429), unknown_template (404 without the store), handoff_failed (503), found (a retry answered with its first try's claim).",
		[]string{"result"}, nil)
	claimsDecidedDesc = prometheus.NewDesc("quan_claims_decided_total",
		"Claims this process persisted, by what the store decided: issued or failed.",
		[]string{"result"}, nil)
	claimsCompensatedDesc = prometheus.NewDesc("quan_claims_compensated_total",
		"Reservations given back after the store failed a claim.", nil, nil)
	claimsRetriedDesc = prometheus.NewDesc("quan_claims_retried_total",
		"Claims of bus deliveries whose persisting failed and goes again.", nil, nil)
	claimsDeadDesc = prometheus.NewDesc("quan_claims_dead_lettered_total",
		"Claims whose hand-off ran out of deliveries and failed.", nil, nil)
	claimsReapedDesc = prometheus.NewDesc("quan_claims_reaped_total",
		"Reservations of claims abandoned by a process that died, given back by the reaper.", nil, nil)
)

// claimCollector reads a ClaimService's counters at each scrape.
type claimCollector struct{ c *quan.ClaimCounters }

func (claimCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{claimsDesc, claimsDecidedDesc, claimsCompensatedDesc, claimsRetriedDesc, claimsDeadDesc, claimsReapedDesc} {
		ch <- d
	}
}

func (k claimCollector) Collect(ch chan<- prometheus.Metric) {
	c := k.c
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(claimsDesc, c.Accepted.Load(), "accepted")
	counter(claimsDesc, c.Refused.Load(), "refused")
	counter(claimsDesc, c.RateLimited.Load(), "rate_limited")
	counter(claimsDesc, c.UnknownIDs.Load(), "unknown_template")
	counter(claimsDesc, c.HandoffFailed.Load(), "handoff_failed")
	counter(claimsDesc, c.Found.Load(), "found")
	counter(claimsDecidedDesc, c.Issued.Load(), "issued")
	counter(claimsDecidedDesc, c.Failed.Load(), "failed")
	counter(claimsCompensatedDesc, c.Compensated.Load())
	counter(claimsRetriedDesc, c.Retried.Load())
	counter(claimsDeadDesc, c.DeadLettered.Load())
	counter(claimsReapedDesc, c.Reaped.Load())
}
