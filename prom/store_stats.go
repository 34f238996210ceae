package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// statsOps record the statistics store's calls.
type statsOps struct {
	templateStats, shopStats, addRefusals *op
}

func newStatsOps(o func(string) *op) statsOps {
	return statsOps{
		templateStats: o("TemplateStats"),
		shopStats:     o("ShopStats"),
		addRefusals:   o("AddRefusals"),
	}
}
func (s *store) TemplateStats(ctx context.Context, shop, id int64, r quan.StatsRange) (_ *quan.TemplateStats, err error) {
	defer s.templateStats.done(ctx, time.Now(), &err)
	return s.s.TemplateStats(ctx, shop, id, r)
}

func (s *store) ShopStats(ctx context.Context, shop int64, r quan.StatsRange) (_ *quan.ShopStats, err error) {
	defer s.shopStats.done(ctx, time.Now(), &err)
	return s.s.ShopStats(ctx, shop, r)
}

func (s *store) AddRefusals(ctx context.Context, counts []quan.RefusalCount) (err error) {
	defer s.addRefusals.done(ctx, time.Now(), &err)
	return s.s.AddRefusals(ctx, counts)
}
