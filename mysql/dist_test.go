package mysql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/redis"
)

// TestDistribution runs the shared-distribution suite on the production
// backends: MySQL, Redis (QUAN_TEST_REDIS) and NATS (QUAN_TEST_NATS), each
// subtest with a database, a key prefix and a stream of its own.
func TestDistribution(t *testing.T) {
	urls := integration.Need(t, integration.MySQL, integration.Redis, integration.NATS)
	redisURL, natsURL := urls[1], urls[2]
	quantest.TestDistribution(t, func(t *testing.T) quantest.Backends {
		s := mysql.NewStore(openDB(t))
		id := rand.Uint32()
		cache, err := redis.Open(t.Context(), redisURL, fmt.Sprintf("quantest:dist%d:", id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := cache.Drop(context.Background()); err != nil {
				t.Error(err)
			}
			cache.Close()
		})
		bus, err := nats.OpenConfig(t.Context(), natsURL, nats.Config{Stream: fmt.Sprintf("DIST%d", id), Namespace: fmt.Sprintf("dist%d", id)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := bus.Drop(context.Background()); err != nil {
				t.Error(err)
			}
			bus.Close()
		})
		return quantest.Backends{
			TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s},
			Cache:      cache,
			Bus:        bus,
		}
	})
}
