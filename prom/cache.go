package prom

import (
	"context"
	"iter"
	"time"

	"github.com/quanhq/quan"
)

// sharedCache is a cache shared by processes (Redis): besides the Cache,
// the claim ledger, the limited reservation, the rate limiter and the
// idempotency store, which code finds by type assertion.
type sharedCache interface {
	quan.Cache
	quan.LimitedReserver
	quan.ClaimLedger
	quan.RateLimiter
	quan.Idempotency
	pinger
}

// Cache returns c recording each call as backend "cache". The result has
// the optional interfaces of c, neither more nor fewer, for the two
// shapes of cache quan has: a bare quan.Cache (inmem) and a shared one
// that is also a quan.LimitedReserver, quan.ClaimLedger,
// quan.RateLimiter, quan.Idempotency and has Ping (redis). A cache of
// another shape is returned as it is, unrecorded, rather than stripped
// of an interface or given one it lacks. Ping passes through untimed.
func (m *BackendMetrics) Cache(c quan.Cache) quan.Cache {
	o := m.ops("cache")
	w := &cache{
		c:              c,
		reserve:        o("Reserve"),
		release:        o("Release"),
		prime:          o("Prime"),
		load:           o("Load"),
		update:         o("Update"),
		reservation:    o("Reservation"),
		state:          o("State"),
		held:           o("Held"),
		holdings:       o("Holdings"),
		swapStock:      o("SwapStock"),
		swapHeld:       o("SwapHeld"),
		periodHoldings: o("PeriodHoldings"),
		swapPeriodHeld: o("SwapPeriodHeld"),
		shopTake:       o("ShopClaimsTake"),
		shopLoad:       o("ShopClaimsLoad"),
		shopGive:       o("ShopClaimsGive"),
	}
	switch s := c.(type) {
	case sharedCache:
		return &limitingCache{
			cache:          w,
			s:              s,
			reserveLimited: o("ReserveLimited"),
			handed:         o("Handed"),
			abandoned:      o("Abandoned"),
			reaped:         o("Reaped"),
			allow:          o("Allow"),
			begin:          o("Begin"),
			complete:       o("Complete"),
			abort:          o("Abort"),
			unhanded:       o("Unhanded"),
		}
	case quan.LimitedReserver, quan.ClaimLedger, quan.RateLimiter, quan.Idempotency, pinger:
		return c
	}
	return w
}

var (
	_ quan.Cache  = (*cache)(nil)
	_ sharedCache = (*limitingCache)(nil)
)

// cache is a quan.Cache that records its calls.
type cache struct {
	c                                                               quan.Cache
	reserve, release, prime, load, update, reservation, state, held *op
	holdings, swapStock, swapHeld, periodHoldings, swapPeriodHeld   *op
	shopTake, shopLoad, shopGive                                    *op
}

func (c *cache) ShopClaimsTake(ctx context.Context, shop, day, limit int64) (_ bool, err error) {
	defer c.shopTake.done(ctx, time.Now(), &err)
	return c.c.ShopClaimsTake(ctx, shop, day, limit)
}

func (c *cache) ShopClaimsLoad(ctx context.Context, shop, day, n int64) (err error) {
	defer c.shopLoad.done(ctx, time.Now(), &err)
	return c.c.ShopClaimsLoad(ctx, shop, day, n)
}

func (c *cache) ShopClaimsGive(ctx context.Context, shop, day int64, key string) (err error) {
	defer c.shopGive.done(ctx, time.Now(), &err)
	return c.c.ShopClaimsGive(ctx, shop, day, key)
}

func (c *cache) Reserve(ctx context.Context, template int64, key string, users []int64, now time.Time) (_ []quan.Refusal, err error) {
	defer c.reserve.done(ctx, time.Now(), &err)
	return c.c.Reserve(ctx, template, key, users, now)
}

func (c *cache) Release(ctx context.Context, template int64, key string) (err error) {
	defer c.release.done(ctx, time.Now(), &err)
	return c.c.Release(ctx, template, key)
}

func (c *cache) Prime(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error]) (err error) {
	defer c.prime.done(ctx, time.Now(), &err)
	return c.c.Prime(ctx, st, holdings)
}

func (c *cache) Load(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error]) (_ bool, err error) {
	defer c.load.done(ctx, time.Now(), &err)
	return c.c.Load(ctx, st, holdings)
}

func (c *cache) Update(ctx context.Context, st quan.TemplateState, stockDelta int64) (err error) {
	defer c.update.done(ctx, time.Now(), &err)
	return c.c.Update(ctx, st, stockDelta)
}

func (c *cache) Reservation(ctx context.Context, template int64, key string) (_ []quan.Refusal, err error) {
	defer c.reservation.done(ctx, time.Now(), &err)
	return c.c.Reservation(ctx, template, key)
}

func (c *cache) State(ctx context.Context, template int64) (_ quan.TemplateState, err error) {
	defer c.state.done(ctx, time.Now(), &err)
	return c.c.State(ctx, template)
}

func (c *cache) Held(ctx context.Context, template, user int64) (_ int64, err error) {
	defer c.held.done(ctx, time.Now(), &err)
	return c.c.Held(ctx, template, user)
}

func (c *cache) Holdings(ctx context.Context, template int64) iter.Seq2[quan.Holding, error] {
	return timedSeq(ctx, c.holdings, c.c.Holdings(ctx, template))
}

func (c *cache) SwapStock(ctx context.Context, template, old, stock int64) (_ bool, err error) {
	defer c.swapStock.done(ctx, time.Now(), &err)
	return c.c.SwapStock(ctx, template, old, stock)
}

func (c *cache) SwapHeld(ctx context.Context, template int64, swaps []quan.HeldSwap) (_ int, err error) {
	defer c.swapHeld.done(ctx, time.Now(), &err)
	return c.c.SwapHeld(ctx, template, swaps)
}

func (c *cache) PeriodHoldings(ctx context.Context, template int64, p quan.Period) iter.Seq2[quan.Holding, error] {
	return timedSeq(ctx, c.periodHoldings, c.c.PeriodHoldings(ctx, template, p))
}

func (c *cache) SwapPeriodHeld(ctx context.Context, template int64, p quan.Period, swaps []quan.HeldSwap) (_ int, err error) {
	defer c.swapPeriodHeld.done(ctx, time.Now(), &err)
	return c.c.SwapPeriodHeld(ctx, template, p, swaps)
}

// limitingCache is a shared cache that records its calls. It is the
// rate limiter and the idempotency store of the process when the cache
// it wraps is (the wiring passes it on as both), so that ClaimService,
// which takes tokens and reserves in one call only when its Limiter is
// its Cache, still finds them the same.
type limitingCache struct {
	*cache
	s                                                                        sharedCache
	reserveLimited, handed, abandoned, reaped, allow, begin, complete, abort *op
	unhanded                                                                 *op
}

func (c *limitingCache) Unhanded(ctx context.Context, template int64) (_ int64, err error) {
	defer c.unhanded.done(ctx, time.Now(), &err)
	return c.s.Unhanded(ctx, template)
}

func (c *limitingCache) Ping(ctx context.Context) error { return c.s.Ping(ctx) }

func (c *limitingCache) ReserveLimited(ctx context.Context, template int64, key string, users []int64, now time.Time, buckets []quan.Bucket) (_ int, _ time.Duration, _ []quan.Refusal, err error) {
	defer c.reserveLimited.done(ctx, time.Now(), &err)
	return c.s.ReserveLimited(ctx, template, key, users, now, buckets)
}

func (c *limitingCache) Handed(ctx context.Context, template int64, keys []string) (_ []quan.Handoff, err error) {
	defer c.handed.done(ctx, time.Now(), &err)
	return c.s.Handed(ctx, template, keys)
}

func (c *limitingCache) Abandoned(ctx context.Context, cutoff time.Time, max int) (_ []quan.LedgerEntry, err error) {
	defer c.abandoned.done(ctx, time.Now(), &err)
	return c.s.Abandoned(ctx, cutoff, max)
}

func (c *limitingCache) Reaped(ctx context.Context, template int64, key string) (err error) {
	defer c.reaped.done(ctx, time.Now(), &err)
	return c.s.Reaped(ctx, template, key)
}

func (c *limitingCache) Allow(ctx context.Context, buckets ...quan.Bucket) (_ int, _ time.Duration, err error) {
	defer c.allow.done(ctx, time.Now(), &err)
	return c.s.Allow(ctx, buckets...)
}

func (c *limitingCache) Begin(ctx context.Context, key string, running time.Duration) (_ quan.KeyState, _ *quan.Replay, err error) {
	defer c.begin.done(ctx, time.Now(), &err)
	return c.s.Begin(ctx, key, running)
}

func (c *limitingCache) Complete(ctx context.Context, key string, r quan.Replay, keep time.Duration) (err error) {
	defer c.complete.done(ctx, time.Now(), &err)
	return c.s.Complete(ctx, key, r, keep)
}

func (c *limitingCache) Abort(ctx context.Context, key string) (err error) {
	defer c.abort.done(ctx, time.Now(), &err)
	return c.s.Abort(ctx, key)
}
