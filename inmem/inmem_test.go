package inmem_test

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/quantest"
)

func TestCache(t *testing.T) {
	quantest.TestCache(t, func(t *testing.T) quan.Cache { return inmem.NewCache() })
}

// A key is remembered for KeyTTL of the cache's clock, then forgotten.
func TestCacheKeyExpiry(t *testing.T) {
	c := inmem.NewCache()
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { return wall }
	st := quan.TemplateState{ID: 1, Status: quan.TemplateActive, IssueStart: wall,
		IssueEnd: wall.Add(72 * time.Hour), PerUserLimit: 5, Stock: 10}
	if err := c.Prime(t.Context(), st, quantest.Holdings(nil)); err != nil {
		t.Fatal(err)
	}
	reserve := func(key string) {
		t.Helper()
		if _, err := c.Reserve(t.Context(), 1, key, []int64{1}, wall); err != nil {
			t.Fatal(err)
		}
	}
	reserve("k")
	wall = wall.Add(inmem.KeyTTL - time.Second)
	reserve("k") // remembered: no second coupon
	if n, _ := c.Held(t.Context(), 1, 1); n != 1 {
		t.Fatalf("holds %d within the TTL, want 1", n)
	}
	wall = wall.Add(time.Second)
	reserve("k") // forgotten: a new reservation
	if n, _ := c.Held(t.Context(), 1, 1); n != 2 {
		t.Fatalf("holds %d after the TTL, want 2", n)
	}
	if err := c.Release(t.Context(), 1, "k"); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Held(t.Context(), 1, 1); n != 1 {
		t.Fatalf("holds %d after releasing the new key, want 1", n)
	}
}

// TestThroughput prints (with -v) what quantest.CacheThroughput measures;
// it asserts nothing about speed.
func TestThroughput(t *testing.T) {
	c := inmem.NewCache()
	calls, _, err := quantest.CacheThroughput(t.Context(), c, 1, 200, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, users, err := quantest.CacheThroughput(t.Context(), c, 2, 8, 5_000, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inmem: %.0f Reserve calls/s (1 user each, 200 goroutines); %.0f users/s (5,000-user batches, 8 goroutines)", calls, users)
}

func TestIdempotency(t *testing.T) {
	quantest.TestIdempotency(t, func(t *testing.T) quan.Idempotency { return inmem.NewIdempotency() })
}

func TestRateLimiter(t *testing.T) {
	quantest.TestRateLimiter(t, func(t *testing.T) quan.RateLimiter { return inmem.NewRateLimiter() })
}
