package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// eventOps record the outbox's calls.
type eventOps struct {
	takeEvents, finishEvents, events, pendingEvents, deleteEvents *op
}

func newEventOps(o func(string) *op) eventOps {
	return eventOps{
		takeEvents:    o("TakeEvents"),
		finishEvents:  o("FinishEvents"),
		events:        o("Events"),
		pendingEvents: o("PendingEvents"),
		deleteEvents:  o("DeleteEvents"),
	}
}

func (s *store) TakeEvents(ctx context.Context, owner string, now, lease time.Time, limit int) (_ []*quan.Event, err error) {
	defer s.takeEvents.done(ctx, time.Now(), &err)
	return s.s.TakeEvents(ctx, owner, now, lease, limit)
}

func (s *store) FinishEvents(ctx context.Context, owner string, now time.Time, seqs []int64) (_ int, err error) {
	defer s.finishEvents.done(ctx, time.Now(), &err)
	return s.s.FinishEvents(ctx, owner, now, seqs)
}

func (s *store) Events(ctx context.Context, after int64, limit int) (_ []*quan.Event, err error) {
	defer s.events.done(ctx, time.Now(), &err)
	return s.s.Events(ctx, after, limit)
}

func (s *store) PendingEvents(ctx context.Context) (_ int64, _ time.Time, err error) {
	defer s.pendingEvents.done(ctx, time.Now(), &err)
	return s.s.PendingEvents(ctx)
}

func (s *store) DeleteEvents(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.deleteEvents.done(ctx, time.Now(), &err)
	return s.s.DeleteEvents(ctx, before, limit)
}
