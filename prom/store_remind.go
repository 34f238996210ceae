package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// remindOps record the reminder store's calls.
type remindOps struct {
	remindExpiring, remindOpening, subscribe, unsubscribe, subscriptions *op
}

func newRemindOps(o func(string) *op) remindOps {
	return remindOps{
		remindExpiring: o("RemindExpiring"),
		remindOpening:  o("RemindOpening"),
		subscribe:      o("Subscribe"),
		unsubscribe:    o("Unsubscribe"),
		subscriptions:  o("Subscriptions"),
	}
}

func (s *store) RemindExpiring(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc) (_ int, err error) {
	defer s.remindExpiring.done(ctx, time.Now(), &err)
	return s.s.RemindExpiring(ctx, now, limit, fn)
}

func (s *store) RemindOpening(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc) (_ int, err error) {
	defer s.remindOpening.done(ctx, time.Now(), &err)
	return s.s.RemindOpening(ctx, now, limit, fn)
}

func (s *store) Subscribe(ctx context.Context, sub *quan.Subscription) (_ bool, err error) {
	defer s.subscribe.done(ctx, time.Now(), &err)
	return s.s.Subscribe(ctx, sub)
}

func (s *store) Unsubscribe(ctx context.Context, template, user int64) (_ bool, err error) {
	defer s.unsubscribe.done(ctx, time.Now(), &err)
	return s.s.Unsubscribe(ctx, template, user)
}

func (s *store) Subscriptions(ctx context.Context, user int64) (_ []*quan.SubscriptionView, err error) {
	defer s.subscriptions.done(ctx, time.Now(), &err)
	return s.s.Subscriptions(ctx, user)
}
