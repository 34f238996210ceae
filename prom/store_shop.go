package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// shopOps record the shop store's calls.
type shopOps struct {
	shopSettings, putShopSettings, shopClaimed *op
}

func newShopOps(o func(string) *op) shopOps {
	return shopOps{
		shopSettings:    o("ShopSettings"),
		putShopSettings: o("PutShopSettings"),
		shopClaimed:     o("ShopClaimed"),
	}
}

func (s *store) ShopSettings(ctx context.Context, shop int64) (_ *quan.ShopSettings, err error) {
	defer s.shopSettings.done(ctx, time.Now(), &err)
	return s.s.ShopSettings(ctx, shop)
}

func (s *store) PutShopSettings(ctx context.Context, st *quan.ShopSettings) (err error) {
	defer s.putShopSettings.done(ctx, time.Now(), &err)
	return s.s.PutShopSettings(ctx, st)
}

func (s *store) ShopClaimed(ctx context.Context, shop int64, from, to time.Time) (_ int64, err error) {
	defer s.shopClaimed.done(ctx, time.Now(), &err)
	return s.s.ShopClaimed(ctx, shop, from, to)
}
