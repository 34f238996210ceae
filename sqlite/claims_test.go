package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/redis"
	"github.com/quanhq/quan/sqlite"
)

// TestClaims runs the claim stampede on SQLite with each cache: the
// in-process one, and Redis when QUAN_TEST_REDIS is set.
func TestClaims(t *testing.T) {
	caches := map[string]func(t *testing.T) (quan.Cache, quan.SharedCache){
		"InProcess": func(t *testing.T) (quan.Cache, quan.SharedCache) { return inmem.NewCache(), nil },
	}
	if url := os.Getenv("QUAN_TEST_REDIS"); url != "" {
		caches["Redis"] = func(t *testing.T) (quan.Cache, quan.SharedCache) {
			c, err := redis.Open(t.Context(), url, fmt.Sprintf("quantest:claims%d:", rand.Uint32()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c.Drop(context.Background())
				c.Close()
			})
			return c, c
		}
	}
	for name, newCache := range caches {
		t.Run(name, func(t *testing.T) {
			quantest.TestClaims(t, func(t *testing.T) quantest.ClaimBackends {
				s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
				srv, err := nats.StartEmbedded(t.Context(), t.TempDir(), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Close)
				bus, err := srv.Bus(t.Context(), nats.Config{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { bus.Close() })
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

// TestReap runs the claim reaper's suite on SQLite, with Redis (whose
// claim ledger the reaper reads) from QUAN_TEST_REDIS and an embedded
// NATS server.
func TestReap(t *testing.T) {
	url := integration.Need(t, integration.Redis)[0]
	quantest.TestReap(t, func(t *testing.T) quantest.ClaimBackends {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		srv, err := nats.StartEmbedded(t.Context(), t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		bus, err := srv.Bus(t.Context(), nats.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bus.Close() })
		c, err := redis.Open(t.Context(), url, fmt.Sprintf("quantest:reap%d:", rand.Uint32()))
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
