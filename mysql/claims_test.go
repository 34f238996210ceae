package mysql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/redis"
)

// TestClaims runs the claim stampede on MySQL with each cache, over the
// NATS of QUAN_TEST_NATS.
func TestClaims(t *testing.T) {
	urls := integration.Need(t, integration.MySQL, integration.Redis, integration.NATS)
	redisURL, natsURL := urls[1], urls[2]
	caches := map[string]func(t *testing.T) (quan.Cache, quan.SharedCache){
		"InProcess": func(t *testing.T) (quan.Cache, quan.SharedCache) { return inmem.NewCache(), nil },
		"Redis": func(t *testing.T) (quan.Cache, quan.SharedCache) {
			c, err := redis.Open(t.Context(), redisURL, fmt.Sprintf("quantest:claims%d:", rand.Uint32()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c.Drop(context.Background())
				c.Close()
			})
			return c, c
		},
	}
	for name, newCache := range caches {
		t.Run(name, func(t *testing.T) {
			quantest.TestClaims(t, func(t *testing.T) quantest.ClaimBackends {
				s := mysql.NewStore(openDB(t))
				id := rand.Uint32()
				bus, err := nats.OpenConfig(t.Context(), natsURL, nats.Config{Stream: fmt.Sprintf("CLAIMS%d", id), Namespace: fmt.Sprintf("claims%d", id)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					bus.Drop(context.Background())
					bus.Close()
				})
				cache, shared := newCache(t)
				return quantest.ClaimBackends{
					ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
					Cache:       cache,
					Shared:      shared,
					Bus:         bus,
				}
			})
		})
	}
}

// TestReap runs the claim reaper's suite on MySQL, with Redis (whose
// claim ledger the reaper reads) from QUAN_TEST_REDIS and the NATS of
// QUAN_TEST_NATS.
func TestReap(t *testing.T) {
	urls := integration.Need(t, integration.MySQL, integration.Redis, integration.NATS)
	redisURL, natsURL := urls[1], urls[2]
	quantest.TestReap(t, func(t *testing.T) quantest.ClaimBackends {
		s := mysql.NewStore(openDB(t))
		id := rand.Uint32()
		bus, err := nats.OpenConfig(t.Context(), natsURL, nats.Config{Stream: fmt.Sprintf("REAP%d", id), Namespace: fmt.Sprintf("reap%d", id)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			bus.Drop(context.Background())
			bus.Close()
		})
		c, err := redis.Open(t.Context(), redisURL, fmt.Sprintf("quantest:reap%d:", id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Drop(context.Background())
			c.Close()
		})
		return quantest.ClaimBackends{
			ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
			Cache:       c,
			Shared:      c,
			Bus:         bus,
		}
	})
}
