package prom

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// backendBuckets are the upper bounds, in seconds, of the backend and
// HTTP latency histograms: those of quan_claim_duration_seconds, so the
// panels of a claim and of the calls it makes line up.
var backendBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// BackendMetrics times the calls quan makes to its backends and counts
// their failures: quan_backend_duration_seconds{backend,op} and
// quan_backend_errors_total{backend,op}, where backend is store, cache
// or bus and op the port's method. Its Store, Cache and Bus wrap an
// adapter in a decorator that records every call; the wiring wraps the
// backends only when metrics are on, so with them off nothing is paid.
type BackendMetrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

// NewBackendMetrics registers the backend metrics in reg.
func NewBackendMetrics(reg prometheus.Registerer) *BackendMetrics {
	m := &BackendMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quan_backend_duration_seconds",
			Help:    "Time taken by calls to a backend (store, cache, bus), by the port method called.",
			Buckets: backendBuckets,
		}, []string{"backend", "op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quan_backend_errors_total",
			Help: "Calls to a backend that failed (internal or unavailable), by the port method called; domain answers such as not found, conflicts or out of stock, and calls their caller canceled, are not failures.",
		}, []string{"backend", "op"}),
	}
	reg.MustRegister(m.duration, m.errors)
	return m
}

// ops returns a maker of the instruments of backend's methods: the
// series are made, at zero, when the decorator is, so a call looks up
// no label.
func (m *BackendMetrics) ops(backend string) func(op string) *op {
	return func(name string) *op {
		return &op{dur: m.duration.WithLabelValues(backend, name), errs: m.errors.WithLabelValues(backend, name)}
	}
}

// op is the instruments of one method of one backend.
type op struct {
	dur  prometheus.Observer
	errs prometheus.Counter
}

// done records a call begun at start that returned *errp, under ctx. It
// takes the error by pointer so that `defer o.done(ctx, time.Now(), &err)`
// sees the method's result.
func (o *op) done(ctx context.Context, start time.Time, errp *error) {
	o.dur.Observe(time.Since(start).Seconds())
	if err := *errp; err != nil && failed(ctx, err) {
		o.errs.Inc()
	}
}

// failed reports whether err, returned by a backend called with ctx, is
// the backend failing: an internal or unavailable error (a driver error,
// a time-out, a lost connection). Every other code is a domain answer the
// backend gave as it should (not found, conflict, out of stock, cache
// cold, chunk applied, lease lost, illegal transition...), and a call its
// caller canceled says nothing of the backend.
func failed(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled) {
		return false
	}
	switch quan.ErrorCode(err) {
	case quan.EINTERNAL, quan.EUNAVAILABLE:
		return true
	}
	return false
}

// pinger is a backend that tells whether it answers. Ping is passed on
// untimed: quan_ready reports it.
type pinger interface {
	Ping(ctx context.Context) error
}
