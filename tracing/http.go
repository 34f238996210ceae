package tracing

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// Handler returns h with a server span around every request (otelhttp),
// named after its route once Route is told it.
//
// The API is public: a client's own traceparent does not become the
// parent of its request's span (a client could otherwise have every
// request of its own recorded, whatever the sample); the span starts a
// trace of its own, linked to the client's.
func (t *Tracer) Handler(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "quan",
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithMeterProvider(noop.NewMeterProvider()), // metrics are the prom package's
		otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}

// Route names the span of r's request after the route pattern it matched
// ("POST /api/v1/templates/{id}/claim"): never after its path, which
// holds ids.
func (t *Tracer) Route(r *http.Request, pattern string) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	span.SetName(pattern)
	_, route, _ := strings.Cut(pattern, " ")
	span.SetAttributes(attribute.String("http.route", route))
}
