package http_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/redis"
)

// TestClaimRateLimitsAllOrNothing: a claim the template's bucket refuses
// takes nothing from the user's, and the 429 says which bucket and when;
// on the in-process cache and limiter, and on Redis (with
// QUAN_TEST_REDIS), where the cache takes the tokens with the reservation.
func TestClaimRateLimitsAllOrNothing(t *testing.T) {
	t.Run("InProcess", func(t *testing.T) { testClaimRateLimitsAllOrNothing(t, nil) })
	t.Run("Redis", func(t *testing.T) {
		// The claims' cache is cold: each template loads from the store
		// on its first claim.
		testClaimRateLimitsAllOrNothing(t, redisCache(t))
	})
}

// redisCache opens a Cache on QUAN_TEST_REDIS under a prefix of its own,
// or skips t.
func redisCache(t *testing.T) *redis.Cache {
	url := integration.Need(t, integration.Redis)[0]
	var b [6]byte
	rand.Read(b[:])
	c, err := redis.Open(t.Context(), url, "quantest:"+hex.EncodeToString(b[:])+":")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Drop(context.Background()); err != nil {
			t.Errorf("delete test keys: %v", err)
		}
		c.Close()
	})
	return c
}

// TestClaimRateLimitSlow: a user allowed one claim in 30,000 years (a
// rate limit set to 1e-12 a second) gets it, then a 429 whose Retry-After
// is in range and some 290 years or more away, not an error.
func TestClaimRateLimitSlow(t *testing.T) {
	for name, cache := range map[string]func(t *testing.T) *redis.Cache{
		"InProcess": func(*testing.T) *redis.Cache { return nil },
		"Redis":     redisCache,
	} {
		t.Run(name, func(t *testing.T) {
			c := cache(t)
			ts := newClaimServer(t, func(ts *testServer) {
				ts.claims.Limits = claims.Limits{UserRate: 1e-12, UserBurst: 1}
				if c != nil {
					ts.claims.Cache, ts.claims.Limiter, ts.claims.Ledger, ts.claims.Reserver = c, c, c, c
				}
			})
			m := ts.merchant(t, 1)
			a := ts.activeTemplate(t, m, 100, 5)
			u := ts.user(t, 1)
			ts.claim(t, u, a.ID).want(t, http.StatusAccepted, "")
			r := ts.claim(t, u, a.ID)
			r.want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
			if n, err := strconv.ParseInt(r.Header.Get("Retry-After"), 10, 64); err != nil || n < 9_000_000_000 {
				t.Fatalf("Retry-After %q (%v); want some 9e9 seconds", r.Header.Get("Retry-After"), err)
			}
		})
	}
}

// testClaimRateLimitsAllOrNothing runs TestClaimRateLimitsAllOrNothing
// with cache (nil: the test server's) as the claims' cache and limiter.
func testClaimRateLimitsAllOrNothing(t *testing.T, cache *redis.Cache) {
	ts := newClaimServer(t, func(ts *testServer) {
		ts.claims.Limits = claims.Limits{UserRate: 0.01, UserBurst: 2, TemplateRate: 0.1, TemplateBurst: 1}
		if cache != nil {
			ts.claims.Cache, ts.claims.Limiter, ts.claims.Ledger, ts.claims.Reserver = cache, cache, cache, cache
		}
	})
	m := ts.merchant(t, 1)
	a, b, c := ts.activeTemplate(t, m, 100, 5), ts.activeTemplate(t, m, 100, 5), ts.activeTemplate(t, m, 100, 5)
	u := ts.user(t, 1)
	ts.claim(t, u, a.ID).want(t, http.StatusAccepted, "") // a's bucket is empty now, u's holds 1
	retryAfter := func(r response) int {
		t.Helper()
		n, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil {
			t.Fatalf("Retry-After %q: %v", r.Header.Get("Retry-After"), err)
		}
		return n
	}
	for range 3 {
		r := ts.claim(t, u, a.ID)
		r.want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
		if ra := retryAfter(r); ra < 9 || ra > 10 || !strings.Contains(r.Problem.Detail, "template") {
			t.Fatalf("refused by a's bucket: Retry-After %d, %q; want about 10s, of the template", ra, r.Problem.Detail)
		}
	}
	// The three refusals left u's last token where it was.
	ts.claim(t, u, b.ID).want(t, http.StatusAccepted, "")
	r := ts.claim(t, u, c.ID)
	r.want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
	if ra := retryAfter(r); ra < 90 || ra > 100 || !strings.Contains(r.Problem.Detail, "you sent too many claims") {
		t.Fatalf("refused by u's bucket: Retry-After %d, %q; want about 100s, naming the user", ra, r.Problem.Detail)
	}
	// Both empty: the longer wait, u's.
	r = ts.claim(t, u, a.ID)
	r.want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
	if ra := retryAfter(r); ra < 90 || ra > 100 {
		t.Fatalf("refused by both: Retry-After %d; want u's, about 100s", ra)
	}
}
