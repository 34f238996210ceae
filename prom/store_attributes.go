package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// attributeOps record the attribute store's calls.
type attributeOps struct {
	putUserFacts, userFacts, scanUserFacts *op
}

func newAttributeOps(o func(string) *op) attributeOps {
	return attributeOps{
		putUserFacts:  o("PutUserFacts"),
		userFacts:     o("UserFacts"),
		scanUserFacts: o("ScanUserFacts"),
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

func (s *store) ScanUserFacts(ctx context.Context, after int64, limit int) (_ []quan.UserFacts, err error) {
	defer s.scanUserFacts.done(ctx, time.Now(), &err)
	return s.s.ScanUserFacts(ctx, after, limit)
}
