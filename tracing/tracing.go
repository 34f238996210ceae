// Package tracing traces quan's requests with OpenTelemetry and sends the
// spans to an OTLP/HTTP collector. It implements quan.Tracer (W3C
// traceparent strings) and decorates what a trace crosses: the HTTP API
// (otelhttp), the bus (the trace rides in a message's headers) and the
// store calls where a claim or a task ends up (IssueClaims, CreateTask,
// ClaimTask, ApplyChunk).
//
// A claim's trace runs from its HTTP request to the store transaction
// that decides it, though it shares a bus message and a transaction with
// other claims: each claim carries its own trace parent
// (quan.ClaimTracesHeader), and IssueClaims records one span per traced
// claim, under that claim's request, all over the one transaction (its
// attributes say how many claims it held). A task's trace runs from its
// upload to its last chunk applied: the task keeps its trace parent in
// the store, the runner continues it, each chunk published carries it in
// its headers, and its consumer applies the chunk under it.
//
// Without a Tracer nothing here is wired in: no span, no header, no
// decorator on any path.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/quanhq/quan"
)

var _ quan.Tracer = (*Tracer)(nil)

// Config says where spans go and how many traces are kept. Endpoint or
// Exporter must be set.
type Config struct {
	// Endpoint is the URL of an OTLP/HTTP collector,
	// http(s)://HOST:PORT[/PATH]; without a path, spans go to /v1/traces.
	// The standard OTEL_EXPORTER_OTLP_HEADERS and the like add to it.
	Endpoint string
	// Exporter, if set, receives every span as it ends, instead of a
	// collector: for tests (tracetest.InMemoryExporter).
	Exporter sdktrace.SpanExporter
	// Sample is the fraction of new traces recorded, in (0, 1]; 0 means 1.
	// Work continuing a trace follows that trace's decision.
	Sample float64
	// Service names the process in its spans' resource (service.name);
	// default "quan". Role, if set, is its quan.role ("serve", "worker").
	Service string
	Role    string
	// Logger receives the failures to export spans, at most one line a
	// minute; nil discards.
	Logger *slog.Logger
}

// ParseEndpoint checks an OTLP/HTTP collector URL and returns the URL
// spans are sent to: /v1/traces is added to one without a path.
func ParseEndpoint(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", errors.New("want the URL of an OTLP/HTTP collector, http://HOST:PORT or https://HOST:PORT[/PATH]")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Tracer makes the spans of one process. Its methods are safe for
// concurrent use.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TraceContext
}

// Open returns a Tracer exporting to cfg's collector in batches, or to
// cfg.Exporter span by span. Nothing is sent before the first span ends;
// an unreachable collector is logged, never an error here. Shutdown
// flushes what is left.
func Open(ctx context.Context, cfg Config) (*Tracer, error) {
	if cfg.Sample < 0 || cfg.Sample > 1 {
		return nil, fmt.Errorf("tracing: sample %v: want a fraction in (0, 1]", cfg.Sample)
	}
	if cfg.Sample == 0 {
		cfg.Sample = 1
	}
	if cfg.Service == "" {
		cfg.Service = "quan"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.Service)}
	if cfg.Role != "" {
		attrs = append(attrs, attribute.String("quan.role", cfg.Role))
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.Sample))),
	}
	switch {
	case cfg.Exporter != nil:
		opts = append(opts, sdktrace.WithSyncer(cfg.Exporter))
	case cfg.Endpoint != "":
		endpoint, err := ParseEndpoint(cfg.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("tracing: endpoint %q: %w", cfg.Endpoint, err)
		}
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(&loggingExporter{SpanExporter: exp, logger: cfg.Logger, endpoint: endpoint}))
	default:
		return nil, errors.New("tracing: neither an endpoint nor an exporter")
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/quanhq/quan/tracing")}, nil
}

// Shutdown sends the spans not sent yet and stops the Tracer, within
// ctx. Spans started after it are dropped. Safe to call twice.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if err := t.provider.Shutdown(ctx); err != nil && !strings.Contains(err.Error(), "already shutdown") {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// Provider is the Tracer's OpenTelemetry provider, for instrumentation of
// other libraries.
func (t *Tracer) Provider() trace.TracerProvider { return t.provider }

// TraceParent implements quan.Tracer: the W3C traceparent of ctx's span,
// "" if it has none or it is not sampled (its trace is not recorded, so
// carrying it would cost bytes for nothing).
func (t *Tracer) TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	return c[traceparent]
}

// WithTraceParent implements quan.Tracer: ctx under the remote span p, a
// W3C traceparent; ctx as it is if p is empty or malformed.
func (t *Tracer) WithTraceParent(ctx context.Context, p string) context.Context {
	if p == "" {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.MapCarrier{traceparent: p})
}

// traceparent is the W3C Trace Context header, which the bus carries too.
const traceparent = "traceparent"

// start starts a span named name as a child of ctx's span, if ctx has
// one: work outside any trace (a poll, a sweep) starts none, so that it
// does not fill the collector with traces of one span. ok is false then,
// and span a no-op.
func (t *Tracer) start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (_ context.Context, span trace.Span, ok bool) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx), false
	}
	ctx, span = t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, span, true
}

// end ends span with err as its status.
func end(span trace.Span, err error, opts ...trace.SpanEndOption) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(opts...)
}

// loggingExporter logs the failures of its exporter, at most once a
// minute, instead of handing them to OpenTelemetry's global error
// handler (which prints to stderr with the standard log package).
type loggingExporter struct {
	sdktrace.SpanExporter
	logger   *slog.Logger
	endpoint string
	last     atomic.Int64 // unix nanos of the last line
}

func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		return nil
	}
	now := time.Now().UnixNano()
	if last := e.last.Load(); now-last >= int64(time.Minute) && e.last.CompareAndSwap(last, now) {
		e.logger.Warn("tracing: spans lost: the collector did not take them", "endpoint", e.endpoint, "spans", len(spans), "err", err)
	}
	return nil
}
