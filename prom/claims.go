package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// scrapeTimeout bounds what a collector asks a backend at a scrape; a
// backend that does not answer in time leaves its gauges out of that
// scrape (quan_ready says why).
const scrapeTimeout = 2 * time.Second

// DurationBuckets are the buckets of quan's latency histograms, in
// seconds: half a millisecond to 2.5 s.
var DurationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// Claims collects the counters of the claims of this process (c), the
// claims waiting for their hand-off, and the claims on bus not yet
// persisted (read from the bus at each scrape; nil: none). The result is
// also the claims' quan.Observer of latency: the wiring sets it as the
// claim service's Latency.
func Claims(c *quan.ClaimCounters, bus quan.Bus) *ClaimMetrics {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "quan_claim_duration_seconds",
		Help:    "Time spent answering a claim (ClaimService.Claim): the synchronous path that answers 202, 409, 429 or 503.",
		Buckets: DurationBuckets,
	})
	return &ClaimMetrics{c: c, bus: bus, latency: h}
}

var (
	claimsDesc = prometheus.NewDesc("quan_claims_total",
		"Claims answered by this process, by result: accepted (202), each refusal of the cache (409: not_active, not_started, ended, limit_reached, sold_out), rate_limited (429), unknown_template (404 without the store), handoff_failed (503), found (a retry answered with its first try's claim).",
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
	claimHandoffPendingDesc = prometheus.NewDesc("quan_claim_handoff_pending",
		"Claims this process reserved whose hand-off to the bus has not returned yet.", nil, nil)
	claimBacklogDesc = prometheus.NewDesc("quan_claim_persist_backlog_messages",
		"Bus messages of claim batches not yet acknowledged by the consumer that persists them (read from the bus at each scrape; the same for every process on one bus).", nil, nil)
)

// ClaimMetrics reads the claims' counters at each scrape, and times each
// claim (Observe).
type ClaimMetrics struct {
	c       *quan.ClaimCounters
	bus     quan.Bus
	latency prometheus.Histogram
}

var _ quan.Observer = (*ClaimMetrics)(nil)

// Observe takes the seconds one claim took.
func (k *ClaimMetrics) Observe(seconds float64) { k.latency.Observe(seconds) }

// Describe implements prometheus.Collector.
func (k *ClaimMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{claimsDesc, claimsDecidedDesc, claimsCompensatedDesc, claimsRetriedDesc,
		claimsDeadDesc, claimsReapedDesc, claimHandoffPendingDesc, claimBacklogDesc} {
		ch <- d
	}
	k.latency.Describe(ch)
}

// Collect implements prometheus.Collector.
func (k *ClaimMetrics) Collect(ch chan<- prometheus.Metric) {
	c := k.c
	count := func(d *prometheus.Desc, v int64, labels ...string) { counter(ch, d, v, labels...) }
	count(claimsDesc, c.Accepted.Load(), "accepted")
	for _, r := range quan.Refusals() {
		count(claimsDesc, c.RefusedBy(r), string(r))
	}
	count(claimsDesc, c.RateLimited.Load(), "rate_limited")
	count(claimsDesc, c.UnknownIDs.Load(), "unknown_template")
	count(claimsDesc, c.HandoffFailed.Load(), "handoff_failed")
	count(claimsDesc, c.Found.Load(), "found")
	count(claimsDecidedDesc, c.Issued.Load(), "issued")
	count(claimsDecidedDesc, c.Failed.Load(), "failed")
	count(claimsCompensatedDesc, c.Compensated.Load())
	count(claimsRetriedDesc, c.Retried.Load())
	count(claimsDeadDesc, c.DeadLettered.Load())
	count(claimsReapedDesc, c.Reaped.Load())
	gauge(ch, claimHandoffPendingDesc, float64(c.HandoffPending.Load()))
	k.latency.Collect(ch)
	if k.bus == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if n, err := k.bus.Backlog(ctx, quan.ClaimBatchSubject, quan.ClaimDurable); err == nil {
		gauge(ch, claimBacklogDesc, float64(n))
	}
}
