package prom_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/prom"
	"github.com/quanhq/quan/quantest"
)

// BenchmarkReserve: one claim's reservation in the in-process cache, bare
// and recorded by the metrics decorator: the decorator's cost on the
// hot path.
func BenchmarkReserve(b *testing.B) {
	for _, tc := range []struct {
		name string
		wrap func(quan.Cache) quan.Cache
	}{
		{"Bare", func(c quan.Cache) quan.Cache { return c }},
		{"Recorded", prom.NewBackendMetrics(prometheus.NewRegistry()).Cache},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := tc.wrap(inmem.NewCache())
			now := time.Now()
			st := quan.TemplateState{ID: 1, Status: quan.TemplateActive, IssueStart: now.Add(-time.Hour),
				IssueEnd: now.Add(time.Hour), PerUserLimit: 1, Stock: 1 << 40}
			if err := c.Prime(b.Context(), st, quantest.Holdings(nil)); err != nil {
				b.Fatal(err)
			}
			keys := make([]string, b.N)
			for i := range keys {
				keys[i] = "claim-" + strconv.Itoa(i)
			}
			users := []int64{0}
			b.ResetTimer()
			for i := range b.N {
				users[0] = int64(i)
				if out, err := c.Reserve(b.Context(), 1, keys[i], users, now); err != nil || out[0] != "" {
					b.Fatal(out, err)
				}
			}
		})
	}
}

// nopCache answers every Reserve at once: under the decorator it leaves
// the decorator's own cost.
type nopCache struct{ quan.Cache }

var reserved = []quan.Refusal{""}

func (nopCache) Reserve(ctx context.Context, template int64, key string, users []int64, now time.Time) ([]quan.Refusal, error) {
	return reserved, nil
}

// BenchmarkDecorator: a call through the decorator to a cache that does
// nothing, against the same call bare: what recording a call costs.
func BenchmarkDecorator(b *testing.B) {
	for _, tc := range []struct {
		name string
		c    quan.Cache
	}{
		{"Bare", nopCache{}},
		{"Recorded", prom.NewBackendMetrics(prometheus.NewRegistry()).Cache(nopCache{})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, now, users := b.Context(), time.Now(), []int64{7}
			for b.Loop() {
				if _, err := tc.c.Reserve(ctx, 1, "k", users, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
