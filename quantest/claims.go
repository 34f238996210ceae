package quantest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
)

// ClaimBackends are the engines claims run on.
type ClaimBackends struct {
	ClaimStores
	Cache quan.Cache
	// Shared is Cache when the processes share it (Redis), nil otherwise:
	// the claims then keep their ledger in it and take their tokens with
	// their reservations, as the binary wires them.
	Shared quan.SharedCache
	Bus    quan.Bus
}

// TestClaims runs the claim stampede on a cache and a store: 10,000
// concurrent claims, a fifth of them from users claiming again, for a
// stock of 1,000 with one coupon per user. Exactly 1,000 are accepted and
// issued, nobody holds two, and the cache and the store agree on the
// stock. newBackends returns fresh backends (a bus with streams of its
// own) for the test.
func TestClaims(t *testing.T, newBackends func(t *testing.T) ClaimBackends) {
	t.Helper()
	t.Run("Stampede", func(t *testing.T) { testClaimStampede(t, newBackends(t)) })
}

// ServeClaims runs s.ServeClaims until the test ends, and fails the test
// if it returns an error.
func ServeClaims(t testing.TB, s *claims.Service) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeClaims(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeClaims: %v", err)
		}
	})
}

func testClaimStampede(t *testing.T, b ClaimBackends) {
	const stock, total, concurrency = 1000, 10_000, 500
	tpl := activeTemplate(t, b.TaskStores, "flash", stock, 1)
	s := &claims.Service{Templates: b.Templates, Coupons: b.Coupons, Claims: b.Claims, Cache: b.Cache, Bus: b.Bus,
		Now: func() time.Time { return claimAt }}
	if b.Shared != nil {
		s.Ledger, s.Reserver = b.Shared, b.Shared
	}
	ServeClaims(t, s)

	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		mu       sync.Mutex
		accepted []string
		refused  = map[string]int{}
	)
	for range concurrency {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				user := 1 + i
				if i%5 == 0 {
					user = 1 + i%2000 // a fifth come from users claiming again
				}
				c, err := s.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: user}, tpl.ID, "")
				mu.Lock()
				if err == nil {
					accepted = append(accepted, c.ID)
				} else {
					var qe *quan.Error
					if !errors.As(err, &qe) || (qe.Code != quan.ESOLDOUT && qe.Code != quan.ELIMIT) {
						t.Errorf("claim %d: %v", i, err)
					}
					refused[quan.ErrorCode(err)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(accepted) != stock {
		t.Fatalf("%d claims accepted, %v refused; want exactly %d accepted", len(accepted), refused, stock)
	}
	// Every accepted claim is persisted with its coupon.
	for deadline := time.Now().Add(60 * time.Second); s.Counters.Issued.Load()+s.Counters.Failed.Load() < stock; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 60s %d of %d accepted claims are decided", s.Counters.Issued.Load()+s.Counters.Failed.Load(), stock)
		}
	}
	for _, id := range accepted {
		c, err := b.Claims.Claim(t.Context(), id)
		if err != nil || c.Status != quan.ClaimIssued {
			t.Fatalf("accepted claim %s: %+v, %v; want issued", id, c, err)
		}
	}
	st := stats(t, b.TaskStores, tpl.ID, 0)
	left := get(t, b.Templates, tpl.ID).Stock
	cached, err := b.Cache.State(t.Context(), tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Coupons != stock || st.MaxPerUser != 1 || left != 0 || cached.Stock != 0 {
		t.Fatalf("coupons %+v, stock left %d in the store and %d in the cache; want %d coupons, one per user, none left",
			st, left, cached.Stock, stock)
	}
}
