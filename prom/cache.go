package prom

import (
	"context"
	"iter"
	"time"

	"github.com/quanhq/quan"
)

// Cache returns c recording each call as backend "cache": a cache of this
// process (inmem). A cache the processes share is recorded by
// SharedCache, with its other roles.
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
	return w
}

// SharedCache returns c recording each call as backend "cache", in each of
// its roles (the claims' ledger and reserver, the rate limiter, the
// idempotency store): the wiring hands the result to each, as it did c.
// Ping passes through untimed.
func (m *BackendMetrics) SharedCache(c quan.SharedCache) quan.SharedCache {
	o := m.ops("cache")
	return &sharedCache{
		cache:          m.Cache(c).(*cache),
		s:              c,
		reserveLimited: o("ReserveLimited"),
		handed:         o("Handed"),
		abandoned:      o("Abandoned"),
		reaped:         o("Reaped"),
		allow:          o("Allow"),
		peek:           o("Peek"),
		begin:          o("Begin"),
		complete:       o("Complete"),
		abort:          o("Abort"),
		unhanded:       o("Unhanded"),
	}
}

var (
	_ quan.Cache       = (*cache)(nil)
	_ quan.SharedCache = (*sharedCache)(nil)
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

// sharedCache is a shared cache that records its calls.
type sharedCache struct {
	*cache
	s                                                                              quan.SharedCache
	reserveLimited, handed, abandoned, reaped, allow, peek, begin, complete, abort *op
	unhanded                                                                       *op
}

func (c *sharedCache) Unhanded(ctx context.Context, template int64) (_ int64, err error) {
	defer c.unhanded.done(ctx, time.Now(), &err)
	return c.s.Unhanded(ctx, template)
}

func (c *sharedCache) Ping(ctx context.Context) error { return c.s.Ping(ctx) }

func (c *sharedCache) ReserveLimited(ctx context.Context, template int64, key string, users []int64, now time.Time, buckets []quan.Bucket) (_ int, _ time.Duration, _ []quan.Refusal, err error) {
	defer c.reserveLimited.done(ctx, time.Now(), &err)
	return c.s.ReserveLimited(ctx, template, key, users, now, buckets)
}

func (c *sharedCache) Handed(ctx context.Context, template int64, keys []string) (_ []quan.Handoff, err error) {
	defer c.handed.done(ctx, time.Now(), &err)
	return c.s.Handed(ctx, template, keys)
}

func (c *sharedCache) Abandoned(ctx context.Context, cutoff time.Time, max int) (_ []quan.LedgerEntry, err error) {
	defer c.abandoned.done(ctx, time.Now(), &err)
	return c.s.Abandoned(ctx, cutoff, max)
}

func (c *sharedCache) Reaped(ctx context.Context, template int64, key string) (err error) {
	defer c.reaped.done(ctx, time.Now(), &err)
	return c.s.Reaped(ctx, template, key)
}

func (c *sharedCache) Allow(ctx context.Context, buckets ...quan.Bucket) (_ int, _ time.Duration, err error) {
	defer c.allow.done(ctx, time.Now(), &err)
	return c.s.Allow(ctx, buckets...)
}

func (c *sharedCache) Peek(ctx context.Context, b quan.Bucket) (_ time.Duration, err error) {
	defer c.peek.done(ctx, time.Now(), &err)
	return c.s.Peek(ctx, b)
}

func (c *sharedCache) Begin(ctx context.Context, key string, running time.Duration) (_ quan.KeyState, _ *quan.Replay, err error) {
	defer c.begin.done(ctx, time.Now(), &err)
	return c.s.Begin(ctx, key, running)
}

func (c *sharedCache) Complete(ctx context.Context, key string, r quan.Replay, keep time.Duration) (err error) {
	defer c.complete.done(ctx, time.Now(), &err)
	return c.s.Complete(ctx, key, r, keep)
}

func (c *sharedCache) Abort(ctx context.Context, key string) (err error) {
	defer c.abort.done(ctx, time.Now(), &err)
	return c.s.Abort(ctx, key)
}
