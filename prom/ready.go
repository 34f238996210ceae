package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ReadyTimeout bounds each scrape's readiness checks: a backend that has
// not answered by then is reported not ready, and the scrape goes on.
const ReadyTimeout = 2 * time.Second

var readyDesc = prometheus.NewDesc("quan_ready",
	"1 if the readiness check of a backend (store, cache, bus) or of the data folder (data) passed at this scrape, else 0.",
	[]string{"check"}, nil)

// Ready collects quan_ready{check}: at each scrape it runs checks, by
// name, at once, and reports 1 for those that return nil within
// ReadyTimeout and 0 for the others (a check that ignores its context
// does not hold the scrape up).
func Ready(checks map[string]func(context.Context) error) prometheus.Collector {
	return readyCollector(checks)
}

type readyCollector map[string]func(context.Context) error

func (readyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- readyDesc }

func (checks readyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	type result struct {
		name string
		ok   bool
	}
	results := make(chan result, len(checks)) // a late check never blocks
	for name, check := range checks {
		go func() { results <- result{name, check(ctx) == nil} }()
	}
	ready := make(map[string]bool, len(checks))
wait:
	for range checks {
		select {
		case r := <-results:
			ready[r.name] = r.ok
		case <-ctx.Done():
			break wait
		}
	}
	for name := range checks {
		v := 0.0
		if ready[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, v, name)
	}
}
