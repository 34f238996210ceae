package redis

import (
	"context"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig/fault"
)

// outageCalls are the cache's calls an outage must fail unavailable:
// the claim path, the distribution path, idempotency and the limiter,
// the ledger, the reconciler's reads.
func outageCalls(c *Cache) []struct {
	name string
	call func(context.Context) error
} {
	now := time.Unix(1_800_000_000, 0)
	st := quan.TemplateState{ID: 1, ShopNo: 1, Status: quan.TemplateActive, IssueStart: now.Add(-time.Hour),
		IssueEnd: now.Add(time.Hour), PerUserLimit: 1, Stock: 10}
	bucket := quan.Bucket{Key: "user:7", Rate: 10, Burst: 10}
	return []struct {
		name string
		call func(context.Context) error
	}{
		{"Ping", c.Ping},
		{"Reserve", func(ctx context.Context) error { _, err := c.Reserve(ctx, 1, "k1", []int64{7}, now); return err }},
		{"ReserveLimited", func(ctx context.Context) error {
			_, _, _, err := c.ReserveLimited(ctx, 1, "k2", []int64{8}, now, []quan.Bucket{bucket})
			return err
		}},
		{"Release", func(ctx context.Context) error { return c.Release(ctx, 1, "k1") }},
		{"Prime", func(ctx context.Context) error { return c.Prime(ctx, st, func(func(quan.Holding, error) bool) {}) }},
		{"State", func(ctx context.Context) error { _, err := c.State(ctx, 1); return err }},
		{"Begin", func(ctx context.Context) error { _, _, err := c.Begin(ctx, "idem", time.Minute); return err }},
		{"Allow", func(ctx context.Context) error { _, _, err := c.Allow(ctx, bucket); return err }},
		{"Handed", func(ctx context.Context) error { _, err := c.Handed(ctx, 1, []string{"k1"}); return err }},
		{"ShopClaimsTake", func(ctx context.Context) error { _, err := c.ShopClaimsTake(ctx, 1, 20000, 5); return err }},
		{"Holdings", func(ctx context.Context) error {
			for _, err := range c.Holdings(ctx, 1) {
				return err
			}
			return nil
		}},
	}
}

// assertUnavailable fails t unless every call fails EUNAVAILABLE of the
// cache. The calls have no deadline, as an API request has none: one
// that waited for Redis to come back would hang the test.
func assertUnavailable(t *testing.T, c *Cache) {
	t.Helper()
	ctx := t.Context()
	for _, tc := range outageCalls(c) {
		err := tc.call(ctx)
		if quan.ErrorCode(err) != quan.EUNAVAILABLE || quan.ErrorBackend(err) != quan.BackendCache {
			t.Errorf("%s: %v (code %q, backend %q), want %s of the %s", tc.name, err,
				quan.ErrorCode(err), quan.ErrorBackend(err), quan.EUNAVAILABLE, quan.BackendCache)
		}
	}
}

// TestCacheUnavailable: with its Redis stopped, every call of the cache
// fails unavailable, naming the cache, and works again once Redis is
// back; so on a replica (a failover's demoted primary refuses writes),
// and on a closed cache.
func TestCacheUnavailable(t *testing.T) {
	t.Run("ServerDown", func(t *testing.T) {
		srv := fault.StartRedis(t)
		c, err := Open(t.Context(), srv.URL(), "down:")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		srv.Stop()
		assertUnavailable(t, c)

		srv.Start()
		ping := func() error { return c.Ping(t.Context()) }
		for deadline := time.Now().Add(30 * time.Second); ping() != nil && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond) // the client reconnects on its own
		}
		if err := ping(); err != nil {
			t.Fatalf("Redis is back: %v", err)
		}
		if _, err := c.Reserve(t.Context(), 1, "k", []int64{7}, time.Now()); quan.ErrorCode(err) != quan.ECACHECOLD {
			t.Fatalf("Reserve once Redis is back (empty): %v, want %s", err, quan.ECACHECOLD)
		}
	})
	t.Run("Replica", func(t *testing.T) {
		srv := fault.StartRedis(t)
		c, err := Open(t.Context(), srv.URL(), "replica:")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A primary demoted to a replica of a primary that is gone: it
		// refuses every write with READONLY.
		if err := c.client.Do(t.Context(), c.client.B().Replicaof().Host("127.0.0.1").Port(1).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1_800_000_000, 0)
		st := quan.TemplateState{ID: 1, ShopNo: 1, Status: quan.TemplateActive, IssueStart: now.Add(-time.Hour),
			IssueEnd: now.Add(time.Hour), PerUserLimit: 1, Stock: 10}
		err = c.Prime(t.Context(), st, func(func(quan.Holding, error) bool) {})
		if quan.ErrorCode(err) != quan.EUNAVAILABLE || quan.ErrorBackend(err) != quan.BackendCache {
			t.Fatalf("Prime on a replica: %v, want %s of the cache", err, quan.EUNAVAILABLE)
		}
	})
	t.Run("Closed", func(t *testing.T) {
		srv := fault.StartRedis(t)
		c, err := Open(t.Context(), srv.URL(), "closed:")
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		assertUnavailable(t, c)
	})
}

// TestOutageLeavesOthers: a domain answer, a caller's cancel and an error
// of the request stay what they are.
func TestOutageLeavesOthers(t *testing.T) {
	c := newTestCache(t)
	if _, err := c.Reserve(t.Context(), 99, "k", []int64{1}, time.Now()); quan.ErrorCode(err) != quan.ECACHECOLD {
		t.Errorf("cold template: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Ping(ctx); err == nil || quan.ErrorCode(err) == quan.EUNAVAILABLE {
		t.Errorf("canceled: %v, want the cancel as it is", err)
	}
}
