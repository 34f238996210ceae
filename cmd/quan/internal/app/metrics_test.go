package app

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/integration"
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

// TestOpenMetricsRedis: with metrics on, the Redis cache is wrapped once
// and that one wrapper is every role of the shared cache: the claims'
// cache, ledger and one-call reserver, the limiter and the idempotency
// store.
func TestOpenMetricsRedis(t *testing.T) {
	url := integration.Need(t, integration.Redis)[0]
	cfg := Config{DataDir: t.TempDir(), ReconcileEvery: time.Minute, CacheURL: url + "?prefix=quantest" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}
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
	shared := any(b.SharedCache)
	for name, role := range map[string]any{"cache": a.Claims.Cache, "ledger": a.Claims.Ledger, "reserver": a.Claims.Reserver,
		"limiter": a.Claims.Limiter, "reconciler's ledger": a.Reconciler.Ledger} {
		if role != shared {
			t.Errorf("the claims' %s %p is not the shared cache %p", name, role, shared)
		}
	}
	if _, ok := b.Checks()["cache"]; !ok {
		t.Error("no readiness check of the cache")
	}
}
