package app

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/tracing"
)

// Tracing configures OpenTelemetry tracing. Its zero value traces
// nothing, at no cost: no tracer, no decorator, no header.
type Tracing struct {
	// OTLPEndpoint is the OTLP/HTTP collector spans go to,
	// http(s)://HOST:PORT[/PATH] (/v1/traces without a path); "" traces
	// nothing unless Exporter is set.
	OTLPEndpoint string
	// Sample is the fraction of new traces recorded, in (0, 1]; 0 means 1.
	Sample float64
	// Exporter, if set, takes the spans instead of a collector, each as it
	// ends: tests hand a tracetest.InMemoryExporter.
	Exporter sdktrace.SpanExporter
}

// on reports whether c asks for tracing.
func (c Tracing) on() bool { return c.OTLPEndpoint != "" || c.Exporter != nil }

// register binds --otlp-endpoint and --trace-sample to c.
func (c *Tracing) register(fs *flag.FlagSet) {
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "trace requests, claims and tasks with OpenTelemetry, sending spans to this OTLP/HTTP collector: http(s)://HOST:PORT[/PATH], /v1/traces without a path (default: no tracing, at no cost)")
	c.Sample = 1
	fs.Func("trace-sample", "with --otlp-endpoint: the fraction of requests whose trace is recorded, in (0, 1] (default 1)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0 && v <= 1) {
			return fmt.Errorf("want a fraction in (0, 1]")
		}
		c.Sample = v
		return nil
	})
}

// validate reports a setting that cannot work, naming its flag.
func (c Tracing) validate() error {
	if c.OTLPEndpoint != "" {
		if _, err := tracing.ParseEndpoint(c.OTLPEndpoint); err != nil {
			return cli.Usagef("--otlp-endpoint %q: %v", c.OTLPEndpoint, err)
		}
	}
	if c.Sample < 0 || c.Sample > 1 {
		return cli.Usagef("--trace-sample %v: want a fraction in (0, 1]", c.Sample)
	}
	return nil
}

// openTracer opens the app's tracer if its config asks for one.
func (a *App) openTracer(ctx context.Context) error {
	c := a.Config.Tracing
	if !c.on() {
		return nil
	}
	t, err := tracing.Open(ctx, tracing.Config{Endpoint: c.OTLPEndpoint, Exporter: c.Exporter, Sample: c.Sample,
		Role: a.Role.String(), Logger: a.Logger})
	if err != nil {
		return err
	}
	a.Tracer = t
	return nil
}

// closeTracer sends the spans not sent yet, within a few seconds: a
// collector that is down does not hold the process up.
func (a *App) closeTracer() {
	if a.Tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Tracer.Shutdown(ctx); err != nil {
		a.Logger.Warn("tracing: spans not sent at shutdown", "err", err)
	}
	a.Tracer = nil
}

// traced returns the use cases' dependencies with spans around them, and
// the quan.Tracer they carry traces with; as they are, and nil, without
// tracing.
func (a *App) traced(st quan.Store, bus, claimBus quan.Bus) (tasks quan.TaskStore, claims quan.ClaimStore, _, _ quan.Bus, tracer quan.Tracer) {
	t := a.Tracer
	if t == nil {
		return st, st, bus, claimBus, nil
	}
	if bus != nil {
		bus = t.Bus(bus)
	}
	if claimBus != nil {
		claimBus = t.Bus(claimBus)
	}
	return t.TaskStore(st), t.ClaimStore(st), bus, claimBus, t
}
