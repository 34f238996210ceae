package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// Bus returns b recording each call as backend "bus": Publish,
// PublishMany and Backlog are timed. Consume runs until its context ends,
// so it is not timed, and its handler's errors are the use case's, not
// the bus's; only an error Consume itself returns (the bus would not
// deliver) counts as a failure. The result has Ping exactly when b has.
func (m *BackendMetrics) Bus(b quan.Bus) quan.Bus {
	o := m.ops("bus")
	w := &bus{b: b, publish: o("Publish"), publishMany: o("PublishMany"), backlog: o("Backlog"),
		consume: m.errors.WithLabelValues("bus", "Consume")}
	if p, ok := b.(pinger); ok {
		return &pingBus{bus: w, p: p}
	}
	return w
}

var (
	_ quan.Bus = (*bus)(nil)
	_ pinger   = (*pingBus)(nil)
)

// bus is a quan.Bus that records its calls.
type bus struct {
	b                             quan.Bus
	publish, publishMany, backlog *op
	consume                       prometheus.Counter
}

// pingBus is a bus whose adapter has Ping.
type pingBus struct {
	*bus
	p pinger
}

func (b *pingBus) Ping(ctx context.Context) error { return b.p.Ping(ctx) }

func (b *bus) Publish(ctx context.Context, m quan.Message) (err error) {
	defer b.publish.done(ctx, time.Now(), &err)
	return b.b.Publish(ctx, m)
}

func (b *bus) PublishMany(ctx context.Context, ms []quan.Message) (err error) {
	defer b.publishMany.done(ctx, time.Now(), &err)
	return b.b.PublishMany(ctx, ms)
}

func (b *bus) Backlog(ctx context.Context, subject, durable string) (_ int64, err error) {
	defer b.backlog.done(ctx, time.Now(), &err)
	return b.b.Backlog(ctx, subject, durable)
}

func (b *bus) Consume(ctx context.Context, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) error {
	err := b.b.Consume(ctx, subject, durable, opt, handle)
	if err != nil && failed(ctx, err) {
		b.consume.Inc()
	}
	return err
}
