package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// keyOps record the calls of the service key and refund stores.
type keyOps struct {
	createAPIKey, apiKeys, apiKeyByHash, revokeAPIKey, touchAPIKey *op
	refundOrder, orderRefunded                                     *op
}

func newKeyOps(o func(string) *op) keyOps {
	return keyOps{
		createAPIKey:  o("CreateAPIKey"),
		apiKeys:       o("APIKeys"),
		apiKeyByHash:  o("APIKeyByHash"),
		revokeAPIKey:  o("RevokeAPIKey"),
		touchAPIKey:   o("TouchAPIKey"),
		refundOrder:   o("RefundOrder"),
		orderRefunded: o("OrderRefunded"),
	}
}

func (s *store) CreateAPIKey(ctx context.Context, k *quan.APIKey) (err error) {
	defer s.createAPIKey.done(ctx, time.Now(), &err)
	return s.s.CreateAPIKey(ctx, k)
}

func (s *store) APIKeys(ctx context.Context) (_ []*quan.APIKey, err error) {
	defer s.apiKeys.done(ctx, time.Now(), &err)
	return s.s.APIKeys(ctx)
}

func (s *store) APIKeyByHash(ctx context.Context, hash []byte) (_ *quan.APIKey, err error) {
	defer s.apiKeyByHash.done(ctx, time.Now(), &err)
	return s.s.APIKeyByHash(ctx, hash)
}

func (s *store) RevokeAPIKey(ctx context.Context, id int64, at time.Time) (_ *quan.APIKey, err error) {
	defer s.revokeAPIKey.done(ctx, time.Now(), &err)
	return s.s.RevokeAPIKey(ctx, id, at)
}

func (s *store) TouchAPIKey(ctx context.Context, id int64, at time.Time) (err error) {
	defer s.touchAPIKey.done(ctx, time.Now(), &err)
	return s.s.TouchAPIKey(ctx, id, at)
}

func (s *store) RefundOrder(ctx context.Context, user int64, order string, at time.Time, ids []int64, fn func([]*quan.Coupon) error) (_ []*quan.Coupon, err error) {
	defer s.refundOrder.done(ctx, time.Now(), &err)
	return s.s.RefundOrder(ctx, user, order, at, ids, fn)
}

func (s *store) OrderRefunded(ctx context.Context, user int64, order string) (_ bool, err error) {
	defer s.orderRefunded.done(ctx, time.Now(), &err)
	return s.s.OrderRefunded(ctx, user, order)
}
