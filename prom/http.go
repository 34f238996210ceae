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
// quan_unavailable_total{backend}, and the bearer tokens accepted, by
// kind: quan_tokens_verified_total{kind}. Its Observe is what
// http.Server.Observe takes, its Unavailable what
// http.Server.Unavailable takes, its TokenVerified what
// http.Tokens.Verified takes.
type HTTP struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	unavailable *prometheus.CounterVec
	series      sync.Map // routeCode → *httpSeries
	tokens      *prometheus.CounterVec
	tokenKinds  map[string]prometheus.Counter // read only: the kinds known at start
}

// TokenKinds are the kinds of bearer token quan_tokens_verified_total has
// a series of from the start: hs256 (minted with the local secret, quan
// token) and jwks (the platform's identity provider).
var TokenKinds = []string{"hs256", "jwks"}

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
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quan_tokens_verified_total",
			Help: `Bearer tokens the API accepted, by kind: hs256 (minted with the local secret by quan token), jwks (signed by the identity provider).`,
		}, []string{"kind"}),
		tokenKinds: map[string]prometheus.Counter{},
	}
	// Every kind's series exists from the start, at zero, so that the
	// switch from HS256 to the provider's tokens can be watched to its end.
	for _, k := range TokenKinds {
		h.tokenKinds[k] = h.tokens.WithLabelValues(k)
	}
	// The backends' series exist from the start, at zero, so that an
	// alert on their rate sees the first outage.
	for _, b := range []string{quan.BackendStore, quan.BackendCache, quan.BackendBus} {
		h.unavailable.WithLabelValues(b)
	}
	reg.MustRegister(h.requests, h.duration, h.unavailable, h.tokens)
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

// TokenVerified counts a bearer token of kind accepted; once a request, so
// the known kinds take no lookup of their series.
func (h *HTTP) TokenVerified(kind string) {
	if c, ok := h.tokenKinds[kind]; ok {
		c.Inc()
		return
	}
	h.tokens.WithLabelValues(kind).Inc()
}
