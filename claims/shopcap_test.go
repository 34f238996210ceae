package claims_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/shops"
)

// shopCountingCache counts the calls of the shop claim counts to a real
// cache.
type shopCountingCache struct {
	quan.Cache
	shopCalls, reservations atomic.Int64
}

func (c *shopCountingCache) ShopClaimsTake(ctx context.Context, shop, day, limit int64) (bool, error) {
	c.shopCalls.Add(1)
	return c.Cache.ShopClaimsTake(ctx, shop, day, limit)
}

func (c *shopCountingCache) ShopClaimsLoad(ctx context.Context, shop, day, n int64) error {
	c.shopCalls.Add(1)
	return c.Cache.ShopClaimsLoad(ctx, shop, day, n)
}

func (c *shopCountingCache) ShopClaimsGive(ctx context.Context, shop, day int64, key string) error {
	c.shopCalls.Add(1)
	return c.Cache.ShopClaimsGive(ctx, shop, day, key)
}

func (c *shopCountingCache) Reservation(ctx context.Context, template int64, key string) ([]quan.Refusal, error) {
	c.reservations.Add(1)
	return c.Cache.Reservation(ctx, template, key)
}

// shopCapRig is claimRig with a second template of shop 1, shop settings,
// and a clock the test moves.
type shopCapRig struct {
	*testrig.ClaimRig
	second *quan.Template
	shops  *shops.Service
	spy    *shopCountingCache
	mu     sync.Mutex
	now    time.Time
}

func newShopCapRig(t *testing.T, limit int64) *shopCapRig {
	t.Helper()
	r := &shopCapRig{ClaimRig: testrig.NewClaimRig(t, 100), now: testrig.ClaimAt}
	second := *r.Tpl
	second.ID = 0
	second.Name = "flash two"
	if err := r.Store.CreateTemplate(t.Context(), &second, "merchant:1"); err != nil {
		t.Fatal(err)
	}
	r.second = &second
	clock := func() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now }
	r.shops = &shops.Service{Store: r.Store, Now: clock}
	r.spy = &shopCountingCache{Cache: r.Cache}
	r.S.Cache, r.S.Now, r.S.Shops = r.spy, clock, r.shops
	if _, err := r.shops.SetSettings(t.Context(), testrig.Merchant1, 1, quan.ShopSettings{DailyClaimCap: limit}); err != nil {
		t.Fatal(err)
	}
	// Served, so that loading the second template into the cache finds
	// no claim waiting on the bus.
	r.Serve(t)
	return r
}

func (r *shopCapRig) at(t time.Time) { r.mu.Lock(); r.now = t; r.mu.Unlock() }

func (r *shopCapRig) claim(t *testing.T, template, user int64, want string) {
	t.Helper()
	c, err := r.S.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: user}, template, "")
	if want == "" {
		if err != nil || c.Status != quan.ClaimPending {
			t.Fatalf("user %d claims template %d: %v, %v; want pending", user, template, c, err)
		}
		return
	}
	if quan.ErrorCode(err) != want {
		t.Fatalf("user %d claims template %d: %v, %v; want %s", user, template, c, err, want)
	}
}

// TestClaimShopDailyCap: a shop's claims a day across its templates,
// counted in Asia/Shanghai days.
func TestClaimShopDailyCap(t *testing.T) {
	t.Parallel()

	t.Run("AcrossTemplatesAndDays", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 3)
		a, b := r.Tpl.ID, r.second.ID
		r.claim(t, a, 1, "")
		r.claim(t, a, 2, "")
		r.claim(t, b, 1, "")
		r.claim(t, b, 2, quan.ESHOPDAILYCAP)
		r.claim(t, a, 3, quan.ESHOPDAILYCAP)
		if n := r.S.Counters.RefusedBy(quan.RefusedShopCap); n != 2 {
			t.Errorf("%d claims counted refused by the shop's cap, want 2", n)
		}
		// 23:59:59 Shanghai time is still the day; 00:00 is the next.
		day := quan.ShanghaiDay(testrig.ClaimAt)
		r.at(quan.ShanghaiDayStart(day + 1).Add(-time.Second))
		r.claim(t, b, 2, quan.ESHOPDAILYCAP)
		r.at(quan.ShanghaiDayStart(day + 1))
		r.claim(t, b, 2, "")
		r.claim(t, b, 3, "")
		r.claim(t, a, 4, "")
		r.claim(t, a, 5, quan.ESHOPDAILYCAP)
	})

	t.Run("RefusedByTemplateGivesBack", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 2)
		r.claim(t, r.Tpl.ID, 1, "")
		for range 3 { // limit_reached: none of them counts
			r.claim(t, r.Tpl.ID, 1, quan.ELIMIT)
		}
		r.claim(t, r.second.ID, 1, "")
		r.claim(t, r.second.ID, 2, quan.ESHOPDAILYCAP)
	})

	t.Run("FailedInTheStoreGivesBack", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 2)
		r.claim(t, r.Tpl.ID, 1, "")
		// User 2 gets a coupon behind the cache's back: the cache lets its
		// claim through, the store fails it, and the count is given back.
		rec, err := r.Store.IssueClaims(t.Context(), []*quan.Claim{{ID: quan.NewClaimID(r.Tpl.ID, 2), TemplateID: r.Tpl.ID,
			UserID: 2, Status: quan.ClaimPending, At: testrig.ClaimAt}}, testrig.ClaimAt)
		if err != nil || rec[0].Status != quan.ClaimIssued {
			t.Fatalf("issue behind the cache: %v, %v", rec, err)
		}
		r.claim(t, r.Tpl.ID, 2, "")
		testrig.WaitFor(t, "the claim failed and given back", func() bool { return r.S.Counters.Compensated.Load() == 1 })
		r.claim(t, r.second.ID, 3, "")
		r.claim(t, r.second.ID, 4, quan.ESHOPDAILYCAP)
	})

	t.Run("ReloadedFromTheStore", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 3)
		r.claim(t, r.Tpl.ID, 1, "")
		r.claim(t, r.second.ID, 1, "")
		testrig.WaitFor(t, "2 claims issued", func() bool { return r.S.Counters.Issued.Load() == 2 })
		// The cache loses everything (a restart of an in-process cache):
		// the shop's count restarts from the store's, 2.
		r.spy.Cache = inmem.NewCache()
		r.claim(t, r.Tpl.ID, 2, "")
		r.claim(t, r.Tpl.ID, 3, quan.ESHOPDAILYCAP)
	})

	t.Run("RetryCountsOnce", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 2)
		id := quan.Identity{Role: quan.RoleUser, UserID: 1}
		for range 3 { // the same Idempotency-Key: one claim
			if _, err := r.S.Claim(t.Context(), id, r.Tpl.ID, "key-1"); err != nil {
				t.Fatal(err)
			}
		}
		r.claim(t, r.second.ID, 1, "")
		r.claim(t, r.second.ID, 2, quan.ESHOPDAILYCAP)
	})

	t.Run("NoCapNoCall", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 0)
		for u := range int64(5) {
			r.claim(t, r.Tpl.ID, 1+u, "")
			r.claim(t, r.second.ID, 1+u, "")
		}
		if n := r.spy.shopCalls.Load() + r.spy.reservations.Load(); n != 0 {
			t.Errorf("claims of a shop without a cap made %d calls to the cache for it, want 0", n)
		}
		// A cap set in the day counts the day's claims before it, as the
		// store holds them: 10.
		testrig.WaitFor(t, "10 claims issued", func() bool { return r.S.Counters.Issued.Load() == 10 })
		if _, err := r.shops.SetSettings(t.Context(), testrig.Merchant1, 1, quan.ShopSettings{DailyClaimCap: 11}); err != nil {
			t.Fatal(err)
		}
		r.claim(t, r.Tpl.ID, 10, "")
		r.claim(t, r.Tpl.ID, 11, quan.ESHOPDAILYCAP)
		if r.spy.shopCalls.Load() == 0 {
			t.Error("claims of a capped shop made no call to the cache for it")
		}
	})
}
