package tracing

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/quanhq/quan"
)

func newTracer(t *testing.T) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := Open(t.Context(), Config{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, exp
}

// fakeBus delivers what is published to the handler of the next Consume
// call, in the caller's goroutine.
type fakeBus struct {
	quan.Bus
	mu        sync.Mutex
	published []quan.Message
}

func (b *fakeBus) Publish(ctx context.Context, m quan.Message) error {
	return b.PublishMany(ctx, []quan.Message{m})
}

func (b *fakeBus) PublishMany(_ context.Context, ms []quan.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.published = append(b.published, ms...)
	return nil
}

func (b *fakeBus) Consume(ctx context.Context, _, _ string, _ quan.ConsumeOptions, handle func(context.Context, quan.Message) error) error {
	for _, m := range b.published {
		if err := handle(context.Background(), m); err != nil {
			return err
		}
	}
	return nil
}

// TestBus: a message published under a span carries it, without touching
// the caller's header, and its handling continues it; one published
// outside any trace carries nothing and is handled without a span.
func TestBus(t *testing.T) {
	tr, exp := newTracer(t)
	inner := &fakeBus{}
	bus := tr.Bus(inner)
	ctx, root := tr.tracer.Start(t.Context(), "request")
	header := map[string]string{"keep": "me"}
	if err := bus.Publish(ctx, quan.Message{Subject: "quan.x", ID: "traced", Header: header}); err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishMany(ctx, []quan.Message{{Subject: "quan.x", ID: "many"}}); err != nil {
		t.Fatal(err)
	}
	root.End()
	if err := bus.Publish(t.Context(), quan.Message{Subject: "quan.x", ID: "untraced"}); err != nil {
		t.Fatal(err)
	}
	if len(header) != 1 {
		t.Errorf("the caller's header became %v", header)
	}
	if m := inner.published[0]; m.Header["keep"] != "me" || m.Header[traceparent] == "" {
		t.Errorf("published header %v, want the caller's and a traceparent", m.Header)
	}
	if m := inner.published[2]; m.Header != nil {
		t.Errorf("a message published outside any trace has header %v", m.Header)
	}
	var handled []trace.SpanContext
	bus.Consume(t.Context(), "quan.x", "d", quan.ConsumeOptions{}, func(ctx context.Context, m quan.Message) error {
		handled = append(handled, trace.SpanContextFromContext(ctx))
		return nil
	})
	rootID := root.SpanContext().TraceID()
	if !handled[0].IsValid() || handled[0].TraceID() != rootID || !handled[1].IsValid() || handled[1].TraceID() != rootID {
		t.Errorf("the traced messages were handled under %v, %v; want the request's trace %s", handled[0], handled[1], rootID)
	}
	if handled[2].IsValid() {
		t.Errorf("the untraced message was handled under %v", handled[2])
	}
	names := map[string]int{}
	for _, s := range exp.GetSpans() {
		names[s.Name]++
		if s.SpanContext.TraceID() != rootID {
			t.Errorf("span %q of another trace", s.Name)
		}
	}
	if names["publish quan.x"] != 2 || names["process quan.x"] != 2 {
		t.Errorf("spans %v, want 2 publishing and 2 handling", names)
	}
}

type fakeClaims struct{ quan.ClaimStore }

func (fakeClaims) IssueClaims(_ context.Context, cs []*quan.Claim, _ time.Time) ([]*quan.Claim, error) {
	out := make([]*quan.Claim, len(cs))
	for i, c := range cs {
		out[i] = &quan.Claim{ID: c.ID, Status: quan.ClaimIssued}
	}
	return out, nil
}

// TestClaimStore: a transaction of claims from several requests gives a
// span under each traced claim's request, and none for a claim not
// traced.
func TestClaimStore(t *testing.T) {
	tr, exp := newTracer(t)
	var parents []trace.SpanContext
	var cs []*quan.Claim
	for _, id := range []string{"a", "b"} {
		ctx, span := tr.tracer.Start(t.Context(), "request "+id)
		span.End()
		parents = append(parents, span.SpanContext())
		cs = append(cs, &quan.Claim{ID: id, TraceParent: tr.TraceParent(ctx)})
	}
	cs = append(cs, &quan.Claim{ID: "untraced"})
	exp.Reset()
	if _, err := tr.ClaimStore(fakeClaims{}).IssueClaims(t.Context(), cs, time.Now()); err != nil {
		t.Fatal(err)
	}
	got := exp.GetSpans()
	if len(got) != 2 {
		t.Fatalf("%d spans, want one per traced claim", len(got))
	}
	for i, s := range got {
		if s.Parent.SpanID() != parents[i].SpanID() || s.SpanContext.TraceID() != parents[i].TraceID() {
			t.Errorf("span of claim %s under %s, want its request %s", cs[i].ID, s.Parent.SpanID(), parents[i].SpanID())
		}
	}
}

type fakeTasks struct {
	quan.TaskStore
	task *quan.Task
}

func (f fakeTasks) ClaimTask(context.Context, string, time.Time, time.Time) (*quan.Task, error) {
	return f.task, nil
}

// TestTaskStore: a runner takes a task outside any trace; the span of
// its taking is in the trace of the task's creation.
func TestTaskStore(t *testing.T) {
	tr, exp := newTracer(t)
	ctx, upload := tr.tracer.Start(t.Context(), "upload")
	upload.End()
	task := &quan.Task{ID: 7, TraceParent: tr.TraceParent(ctx)}
	if _, err := tr.TaskStore(fakeTasks{task: task}).ClaimTask(t.Context(), "runner", time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TaskStore(fakeTasks{}).ClaimTask(t.Context(), "runner", time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	var taken []string
	for _, s := range exp.GetSpans() {
		if s.Name == "store ClaimTask" {
			taken = append(taken, s.Parent.SpanID().String())
		}
	}
	if len(taken) != 1 || taken[0] != upload.SpanContext().SpanID().String() {
		t.Errorf("ClaimTask spans under %v, want one under the upload %s", taken, upload.SpanContext().SpanID())
	}
}

// TestTraceParent: only a sampled span is carried, and what is carried
// comes back as the remote parent.
func TestTraceParent(t *testing.T) {
	tr, _ := newTracer(t)
	if p := tr.TraceParent(t.Context()); p != "" {
		t.Errorf("no span: parent %q", p)
	}
	ctx, span := tr.tracer.Start(t.Context(), "x")
	defer span.End()
	p := tr.TraceParent(ctx)
	back := trace.SpanContextFromContext(tr.WithTraceParent(t.Context(), p))
	if !back.IsRemote() || back.SpanID() != span.SpanContext().SpanID() || back.TraceID() != span.SpanContext().TraceID() {
		t.Errorf("parent %q came back as %v", p, back)
	}
	if got := tr.WithTraceParent(t.Context(), "garbage"); trace.SpanContextFromContext(got).IsValid() {
		t.Error("a malformed parent gave a span context")
	}
	unsampled := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: span.SpanContext().TraceID(), SpanID: span.SpanContext().SpanID()}))
	if p := tr.TraceParent(unsampled); p != "" {
		t.Errorf("a span not sampled: parent %q", p)
	}
}
