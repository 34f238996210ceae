package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// factsOps record the attribute store's calls.
type factsOps struct {
	putUserFacts, userFacts, scanUserFacts, countUserFacts, splitUserFacts *op
}

func newFactsOps(o func(string) *op) factsOps {
	return factsOps{
		putUserFacts:   o("PutUserFacts"),
		userFacts:      o("UserFacts"),
		scanUserFacts:  o("ScanUserFacts"),
		countUserFacts: o("CountUserFacts"),
		splitUserFacts: o("SplitUserFacts"),
	}
}

func (s *store) PutUserFacts(ctx context.Context, now time.Time, facts []quan.UserFacts) (err error) {
	defer s.putUserFacts.done(ctx, time.Now(), &err)
	return s.s.PutUserFacts(ctx, now, facts)
}

func (s *store) UserFacts(ctx context.Context, users []int64) (_ map[int64]*quan.UserFacts, err error) {
	defer s.userFacts.done(ctx, time.Now(), &err)
	return s.s.UserFacts(ctx, users)
}

func (s *store) ScanUserFacts(ctx context.Context, after int64, limit int, filter quan.FactsFilter) (_ []quan.UserFacts, err error) {
	defer s.scanUserFacts.done(ctx, time.Now(), &err)
	return s.s.ScanUserFacts(ctx, after, limit, filter)
}

func (s *store) CountUserFacts(ctx context.Context) (_ int64, err error) {
	defer s.countUserFacts.done(ctx, time.Now(), &err)
	return s.s.CountUserFacts(ctx)
}

func (s *store) SplitUserFacts(ctx context.Context, parts int) (_ []int64, err error) {
	defer s.splitUserFacts.done(ctx, time.Now(), &err)
	return s.s.SplitUserFacts(ctx, parts)
}

// ExactFilter asks no backend: it is not recorded.
func (s *store) ExactFilter(where []quan.FactsClause) bool { return s.s.ExactFilter(where) }
