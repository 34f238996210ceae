package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// RelayStats is what an event relay counted (events.Relay's Counters).
type RelayStats interface {
	RelayStats() (relayed, messages, retaken, failures int64)
}

// Events collects a relay's counts and the outbox's backlog: the events
// not relayed yet and the age of the oldest (read from the store at each
// scrape, the same for every process on one store: aggregate them with
// max, not sum).
func Events(r RelayStats, st quan.EventStore, now quan.Clock) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	return eventCollector{r: r, st: st, now: now}
}

var (
	eventsRelayedDesc = prometheus.NewDesc("quan_events_relayed_total",
		"Events this process's relay published and handed on, by result: relayed (marked relayed), retaken (taken again after a relay died or lost its lease: maybe published twice, de-duplicated by id).",
		[]string{"result"}, nil)
	eventMessagesDesc = prometheus.NewDesc("quan_event_messages_total",
		"Bus messages this process's relay published.", nil, nil)
	eventFailuresDesc = prometheus.NewDesc("quan_event_relay_failures_total",
		"Batches of events this process's relay could not pass on: left to their lease and taken again.", nil, nil)
	eventsPendingDesc = prometheus.NewDesc("quan_events_pending",
		"Events recorded and not relayed yet (read from the store at each scrape).", nil, nil)
	eventsOldestDesc = prometheus.NewDesc("quan_events_oldest_pending_age_seconds",
		"How long the oldest event not relayed yet has waited; 0 when none waits.", nil, nil)
)

type eventCollector struct {
	r   RelayStats
	st  quan.EventStore
	now quan.Clock
}

func (eventCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- eventsRelayedDesc
	ch <- eventMessagesDesc
	ch <- eventFailuresDesc
	ch <- eventsPendingDesc
	ch <- eventsOldestDesc
}

// Collect leaves out the backlog's gauges when the store does not answer
// in time.
func (k eventCollector) Collect(ch chan<- prometheus.Metric) {
	relayed, messages, retaken, failures := k.r.RelayStats()
	counter(ch, eventsRelayedDesc, relayed, "relayed")
	counter(ch, eventsRelayedDesc, retaken, "retaken")
	counter(ch, eventMessagesDesc, messages)
	counter(ch, eventFailuresDesc, failures)
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	n, oldest, err := k.st.PendingEvents(ctx)
	if err != nil {
		return
	}
	gauge(ch, eventsPendingDesc, float64(n))
	age := 0.0
	if !oldest.IsZero() {
		age = max(0, k.now().Sub(oldest).Seconds())
	}
	gauge(ch, eventsOldestDesc, age)
}
