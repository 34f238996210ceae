package tracing

import (
	"context"
	"maps"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/quanhq/quan"
)

// Bus returns b with traces carried in its messages' headers: a message
// published under a span carries it ("traceparent", unless it has one),
// and its handler runs under a span continuing it. Messages published
// outside any trace are handled without one. A batch of claims is
// published outside any trace and carries one per claim instead
// (quan.ClaimTracesHeader), which the store decorator continues.
func (t *Tracer) Bus(b quan.Bus) quan.Bus { return &tracedBus{Bus: b, t: t} }

type tracedBus struct {
	quan.Bus
	t *Tracer
}

func (b *tracedBus) Publish(ctx context.Context, m quan.Message) error {
	ctx, span, ok := b.t.start(ctx, "publish "+m.Subject, trace.SpanKindProducer, messageAttrs(m)...)
	if !ok {
		return b.Bus.Publish(ctx, m)
	}
	m.Header = b.t.inject(ctx, m.Header)
	err := b.Bus.Publish(ctx, m)
	end(span, err)
	return err
}

func (b *tracedBus) PublishMany(ctx context.Context, ms []quan.Message) error {
	if len(ms) == 0 {
		return b.Bus.PublishMany(ctx, ms)
	}
	ctx, span, ok := b.t.start(ctx, "publish "+ms[0].Subject, trace.SpanKindProducer,
		attribute.String("messaging.destination.name", ms[0].Subject), attribute.Int("messaging.batch.message_count", len(ms)))
	if !ok {
		return b.Bus.PublishMany(ctx, ms)
	}
	traced := make([]quan.Message, len(ms))
	for i, m := range ms {
		m.Header = b.t.inject(ctx, m.Header)
		traced[i] = m
	}
	err := b.Bus.PublishMany(ctx, traced)
	end(span, err)
	return err
}

// inject returns h with ctx's span as its traceparent, copied: the
// caller's map is left alone. A traceparent already there is kept.
func (t *Tracer) inject(ctx context.Context, h map[string]string) map[string]string {
	if _, ok := h[traceparent]; ok {
		return h
	}
	out := make(map[string]string, len(h)+1)
	maps.Copy(out, h)
	t.prop.Inject(ctx, propagation.MapCarrier(out))
	return out
}

func (b *tracedBus) Consume(ctx context.Context, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) error {
	return b.Bus.Consume(ctx, subject, durable, opt, func(ctx context.Context, m quan.Message) error {
		p := m.Header[traceparent]
		if p == "" {
			return handle(ctx, m)
		}
		ctx, span, ok := b.t.start(b.t.WithTraceParent(ctx, p), "process "+m.Subject, trace.SpanKindConsumer,
			append(messageAttrs(m), attribute.String("messaging.consumer.group.name", durable))...)
		if !ok { // a malformed traceparent
			return handle(ctx, m)
		}
		err := handle(ctx, m)
		end(span, err)
		return err
	})
}

func messageAttrs(m quan.Message) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("messaging.destination.name", m.Subject),
		attribute.Int("messaging.message.body.size", len(m.Data)),
	}
	if m.ID != "" {
		attrs = append(attrs, attribute.String("messaging.message.id", m.ID))
	}
	if m.Attempt > 0 {
		attrs = append(attrs, attribute.String("quan.bus.attempt", strconv.Itoa(m.Attempt)))
	}
	return attrs
}
