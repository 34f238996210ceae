package claims_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/testrig"
)

// limitedCache is an in-process cache that is its own rate limiter and a
// quan.LimitedReserver, as the Redis cache is; it counts ReserveLimited
// calls with buckets.
type limitedCache struct {
	*inmem.Cache
	*inmem.RateLimiter
	calls atomic.Int64
}

func (c *limitedCache) ReserveLimited(ctx context.Context, template int64, key string, users []int64, now time.Time, buckets []quan.Bucket) (int, time.Duration, []quan.Refusal, error) {
	if len(buckets) > 0 {
		c.calls.Add(1)
	}
	if _, err := c.State(ctx, template); err != nil {
		return -1, 0, nil, err // cold: no token taken
	}
	refused, wait, err := c.Allow(ctx, buckets...)
	if err != nil || refused >= 0 {
		return refused, wait, nil, err
	}
	out, err := c.Reserve(ctx, template, key, users, now)
	return -1, 0, out, err
}

// TestClaimRateLimits: a claim over the user's or the template's limit is
// ERATELIMITED with the wait, whether the cache takes the tokens with the
// reservation (the cache is its Reserver and Limiter) or the Limiter
// goes first.
func TestClaimRateLimits(t *testing.T) {
	for _, way := range []struct {
		name     string
		limiter  func(c *limitedCache) quan.RateLimiter
		oneCalls bool
	}{
		{"OneCall", func(c *limitedCache) quan.RateLimiter { return c }, true},
		{"AllowThenReserve", func(*limitedCache) quan.RateLimiter { return inmem.NewRateLimiter() }, false},
	} {
		t.Run(way.name, func(t *testing.T) {
			r := testrig.NewClaimRig(t, 100)
			c := &limitedCache{Cache: inmem.NewCache(), RateLimiter: inmem.NewRateLimiter()}
			r.S.Cache, r.S.Limiter = c, way.limiter(c)
			if way.oneCalls {
				r.S.Reserver = c
			}
			r.S.Limits = claims.Limits{UserRate: 0.01, UserBurst: 1, TemplateRate: 0.01, TemplateBurst: 2}
			user := func(id int64) quan.Identity { return quan.Identity{Role: quan.RoleUser, UserID: id} }
			limited := func(id int64, what string) {
				t.Helper()
				_, err := r.S.Claim(t.Context(), user(id), r.Tpl.ID, "")
				if quan.ErrorCode(err) != quan.ERATELIMITED || !strings.Contains(quan.ErrorMessage(err), what) {
					t.Fatalf("user %d: %v, want rate_limited naming %q", id, err, what)
				}
				if wait := quan.ErrorRetryAfter(err); wait < 99*time.Second || wait > 100*time.Second {
					t.Errorf("user %d: retry after %s, want about 100s", id, wait)
				}
			}
			// The cold cache costs the first claim no token: the user's
			// one token is left for it once the template is loaded.
			if _, err := r.S.Claim(t.Context(), user(1), r.Tpl.ID, ""); err != nil {
				t.Fatal(err)
			}
			limited(1, "you sent too many claims")
			if _, err := r.S.Claim(t.Context(), user(2), r.Tpl.ID, ""); err != nil {
				t.Fatal(err)
			}
			limited(3, "template "+strconv.FormatInt(r.Tpl.ID, 10)+" gets too many claims")
			if n := r.S.Counters.RateLimited.Load(); n != 2 {
				t.Errorf("%d claims counted rate limited, want 2", n)
			}
			if n := c.calls.Load(); (n > 0) != way.oneCalls {
				t.Errorf("%d calls of ReserveLimited with buckets", n)
			}
		})
	}
}
