package prom

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// HTTP counts and times the requests of the API listener:
// quan_http_requests_total{route,code} and
// quan_http_request_duration_seconds{route}, and counts those answered
// 503 because a backend was down, by backend:
// quan_unavailable_total{backend}. Its Observe is what
// http.Server.Observe takes, its Unavailable what
// http.Server.Unavailable takes.
type HTTP struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	unavailable *prometheus.CounterVec
	series      sync.Map // routeCode → *httpSeries
}

// routeCode names the series of a request.
type routeCode struct {
	route string
	code  int
}

type httpSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewHTTP registers the HTTP metrics in reg.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quan_http_requests_total",
			Help: `Requests the API answered, by route pattern ("unmatched" for none) and status code.`,
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quan_http_request_duration_seconds",
			Help:    `Time the API took to answer a request, by route pattern ("unmatched" for none).`,
			Buckets: backendBuckets,
		}, []string{"route"}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quan_unavailable_total",
			Help: `Requests answered 503 unavailable because a backend was down, by backend (store, cache, bus; "unknown" if the error named none).`,
		}, []string{"backend"}),
	}
	// The backends' series exist from the start, at zero, so that an
	// alert on their rate sees the first outage.
	for _, b := range []string{quan.BackendStore, quan.BackendCache, quan.BackendBus} {
		h.unavailable.WithLabelValues(b)
	}
	reg.MustRegister(h.requests, h.duration, h.unavailable)
	return h
}

// Unavailable counts a request answered 503 because backend was down.
func (h *HTTP) Unavailable(backend string) {
	h.unavailable.WithLabelValues(backend).Inc()
}

// Observe records a request to route (a mux pattern, or "unmatched"),
// answered with status, that took d. The routes and statuses a server
// answers are few, so the series it makes stay few.
func (h *HTTP) Observe(route string, status int, d time.Duration) {
	k := routeCode{route, status}
	v, ok := h.series.Load(k)
	if !ok {
		v, _ = h.series.LoadOrStore(k, &httpSeries{
			requests: h.requests.WithLabelValues(route, strconv.Itoa(status)),
			duration: h.duration.WithLabelValues(route),
		})
	}
	s := v.(*httpSeries)
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
}
