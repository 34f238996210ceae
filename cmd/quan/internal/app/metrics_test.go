package app

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	natsbus "github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/redis"
	"github.com/quanhq/quan/sqlite"
)

// TestOpenMetricsOff: with --metrics=false the use cases run on the
// backends as opened, not wrapped in metrics decorators (which the
// benchmark of metrics on and off compares); with metrics on they are
// wrapped.
func TestOpenMetricsOff(t *testing.T) {
	ctx := context.Background()
	for _, off := range []bool{true, false} {
		a, err := Open(ctx, Config{DataDir: t.TempDir(), MetricsOff: off}, Server, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := a.Backends
		_, rawStore := b.Store.(*sqlite.Store)
		_, rawCache := b.ClaimCache.(*inmem.Cache)
		_, rawBus := b.ClaimBus.(*natsbus.Bus)
		_, claimStore := a.Claims.Claims.(*sqlite.Store)
		if rawStore != off || rawCache != off || rawBus != off || claimStore != off {
			t.Errorf("metrics off %t: store %T, cache %T, bus %T, claims on %T", off, b.Store, b.ClaimCache, b.ClaimBus, a.Claims.Claims)
		}
		if b.Cache != b.ClaimCache {
			t.Errorf("metrics off %t: the cache %p and the claims' cache %p differ", off, b.Cache, b.ClaimCache)
		}
		a.Close()
	}
}

// TestOpenMetricsRedis: with metrics on, the Redis cache is wrapped and
// stays the limiter and the idempotency store, the very same object, so
// that a claim still takes its tokens and reserves in one call
// (ClaimService checks that its Limiter is its Cache).
func TestOpenMetricsRedis(t *testing.T) {
	url := os.Getenv("QUAN_TEST_REDIS")
	if url == "" {
		t.Skip("set QUAN_TEST_REDIS=redis://127.0.0.1:6379 to test against a Redis")
	}
	cfg := Config{DataDir: t.TempDir(), CacheURL: url + "?prefix=quantest" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}
	a, err := Open(context.Background(), cfg, Server, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := a.Backends
	if _, raw := b.Cache.(*redis.Cache); raw {
		t.Fatal("the Redis cache is not wrapped")
	}
	if any(b.Limiter) != any(b.ClaimCache) || any(b.Idempotency) != any(b.Cache) || b.Cache != b.ClaimCache {
		t.Errorf("cache %p, claims' cache %p, limiter %p, idempotency %p: want one", b.Cache, b.ClaimCache, b.Limiter, b.Idempotency)
	}
	if any(a.Claims.Limiter) != any(a.Claims.Cache) {
		t.Errorf("the claims' limiter %p is not their cache %p", a.Claims.Limiter, a.Claims.Cache)
	}
	if _, ok := a.Claims.Cache.(quan.ClaimLedger); !ok {
		t.Error("the claims' cache is no ClaimLedger")
	}
	if _, ok := a.Claims.Cache.(quan.LimitedReserver); !ok {
		t.Error("the claims' cache is no LimitedReserver")
	}
	if _, ok := b.Checks()["cache"]; !ok {
		t.Error("no readiness check of the cache")
	}
}
