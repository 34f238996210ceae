package tracing

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/quanhq/quan"
)

// ClaimStore returns s with a span per traced claim around IssueClaims;
// its other methods are s's own.
//
// A transaction decides the claims of many requests, each of its own
// trace, so one span with one parent could not be each claim's: every
// claim with a trace parent (quan.Claim.TraceParent) gets a span of its
// own under its request, all covering the one transaction, with the
// number of claims it held (quan.claims.batch) and what it decided for
// that claim. Claims without one cost nothing.
func (t *Tracer) ClaimStore(s quan.ClaimStore) quan.ClaimStore {
	return &claimStore{ClaimStore: s, t: t}
}

type claimStore struct {
	quan.ClaimStore
	t *Tracer
}

func (s *claimStore) IssueClaims(ctx context.Context, cs []*quan.Claim, now time.Time) ([]*quan.Claim, error) {
	var (
		spans []trace.Span
		idx   []int // spans[k] is of cs[idx[k]]
	)
	for i, c := range cs {
		if c.TraceParent == "" {
			continue
		}
		_, span, ok := s.t.start(s.t.WithTraceParent(ctx, c.TraceParent), "store IssueClaims", trace.SpanKindInternal,
			attribute.String("quan.claim.id", c.ID), attribute.Int64("quan.template.id", c.TemplateID),
			attribute.Int("quan.claims.batch", len(cs)))
		if ok {
			spans, idx = append(spans, span), append(idx, i)
		}
	}
	if len(spans) == 0 {
		ctx, span, ok := s.t.start(ctx, "store IssueClaims", trace.SpanKindInternal, attribute.Int("quan.claims.batch", len(cs)))
		recs, err := s.ClaimStore.IssueClaims(ctx, cs, now)
		if ok {
			end(span, err)
		}
		return recs, err
	}
	recs, err := s.ClaimStore.IssueClaims(ctx, cs, now)
	at := trace.WithTimestamp(time.Now())
	for k, span := range spans {
		if err == nil && idx[k] < len(recs) {
			rec := recs[idx[k]]
			span.SetAttributes(attribute.String("quan.claim.status", string(rec.Status)))
			if rec.Reason != "" {
				span.SetAttributes(attribute.String("quan.claim.reason", rec.Reason))
			}
		}
		end(span, err, at)
	}
	return recs, err
}

// TaskStore returns s with spans around CreateTask and ApplyChunk, under
// the caller's span, and around ClaimTask under the trace of the task it
// gives (quan.Task.TraceParent): a runner polls outside any trace, and
// the task it takes says which trace it continues. Its other methods are
// s's own.
func (t *Tracer) TaskStore(s quan.TaskStore) quan.TaskStore { return &taskStore{TaskStore: s, t: t} }

type taskStore struct {
	quan.TaskStore
	t *Tracer
}

func (s *taskStore) CreateTask(ctx context.Context, task *quan.Task) error {
	ctx, span, ok := s.t.start(ctx, "store CreateTask", trace.SpanKindInternal, attribute.Int64("quan.template.id", task.TemplateID))
	err := s.TaskStore.CreateTask(ctx, task)
	if ok {
		if err == nil {
			span.SetAttributes(attribute.Int64("quan.task.id", task.ID))
		}
		end(span, err)
	}
	return err
}

func (s *taskStore) ClaimTask(ctx context.Context, owner string, now, lease time.Time) (*quan.Task, error) {
	start := time.Now()
	task, err := s.TaskStore.ClaimTask(ctx, owner, now, lease)
	if err != nil || task == nil || task.TraceParent == "" {
		return task, err
	}
	pctx := s.t.WithTraceParent(ctx, task.TraceParent)
	if trace.SpanContextFromContext(pctx).IsValid() {
		_, span := s.t.tracer.Start(pctx, "store ClaimTask", trace.WithTimestamp(start),
			trace.WithAttributes(attribute.Int64("quan.task.id", task.ID), attribute.String("quan.task.owner", owner),
				attribute.Int64("quan.task.chunks_done", task.ChunksDone)))
		span.End()
	}
	return task, nil
}

func (s *taskStore) ApplyChunk(ctx context.Context, c *quan.Chunk) (quan.TaskCounts, error) {
	ctx, span, ok := s.t.start(ctx, "store ApplyChunk", trace.SpanKindInternal,
		attribute.Int64("quan.task.id", c.TaskID), attribute.Int64("quan.chunk.seq", c.Seq), attribute.Int("quan.chunk.rows", len(c.Rows)))
	n, err := s.TaskStore.ApplyChunk(ctx, c)
	if ok {
		switch {
		case err == nil:
			span.SetAttributes(attribute.Int64("quan.chunk.issued", n.Issued))
			end(span, nil)
		case errors.Is(err, quan.ErrChunkApplied):
			// A redelivery: the chunk is done, not failed.
			span.SetAttributes(attribute.Bool("quan.chunk.applied_before", true))
			end(span, nil)
		default:
			end(span, err)
		}
	}
	return n, err
}
