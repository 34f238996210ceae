package claims_test

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/templates"
)

// BenchmarkClaimByCode prints what a claim by promo code (口令券) costs
// beside a claim of the template by id: each iteration one accepted
// claim of another user, handed to an embedded NATS bus and persisted to
// SQLite in the background. The code's own work is a look at the user's
// bucket of wrong codes and the code's kept template.
//
//	go test ./claims -run '^$' -bench ClaimByCode -benchtime 20000x
func BenchmarkClaimByCode(b *testing.B) {
	for _, byCode := range []bool{false, true} {
		name := "ByID"
		if byCode {
			name = "ByCode"
		}
		b.Run(name, func(b *testing.B) {
			store := testrig.Store(b)
			srv, err := nats.StartEmbedded(b.Context(), b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Close)
			bus, err := srv.Bus(b.Context(), nats.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { bus.Close() })
			now := func() time.Time { return testrig.ClaimAt }
			cache := inmem.NewCache()
			in := testrig.DirectSpec(testrig.IssueStart)
			in.Stock, in.PromoCode = quan.MaxStock, "BENCH-1"
			ts := &templates.Service{Store: store, Cache: cache, Now: now}
			tpl, err := ts.Create(b.Context(), testrig.Merchant1, in)
			if err == nil {
				tpl, err = ts.Activate(b.Context(), testrig.Merchant1, tpl.ID)
			}
			if err != nil {
				b.Fatal(err)
			}
			s := &claims.Service{Templates: store, Coupons: store, Claims: store, Cache: cache, Bus: bus,
				Limiter: inmem.NewRateLimiter(), Now: now}
			quantest.ServeClaims(b, s)
			user := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				user++
				who := quan.Identity{Role: quan.RoleUser, UserID: user}
				var err error
				if byCode {
					_, err = s.ClaimCode(b.Context(), who, "bench-1", "")
				} else {
					_, err = s.Claim(b.Context(), who, tpl.ID, "")
				}
				if err != nil {
					b.Fatalf("claim of user %d: %v", user, err)
				}
			}
		})
	}
}
