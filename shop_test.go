package quan_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/sqlite"
)

func newShopService(t *testing.T, now func() time.Time) (*quan.ShopService, *sqlite.Store) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := sqlite.NewStore(db)
	return &quan.ShopService{Store: st, Now: now}, st
}

func TestShopService(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)

	t.Run("MerchantSetsItsOwnShop", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		ctx := t.Context()
		got, err := s.Settings(ctx, merchant1, 1)
		if err != nil || *got != (quan.ShopSettings{ShopNo: 1}) {
			t.Fatalf("settings never set: %+v, %v; want zero settings of shop 1", got, err)
		}
		set, err := s.SetSettings(ctx, merchant1, 1, quan.ShopSettings{ShopNo: 99, DailyClaimCap: 500})
		if err != nil {
			t.Fatal(err)
		}
		want := quan.ShopSettings{ShopNo: 1, DailyClaimCap: 500, UpdatedAt: at, UpdatedBy: "merchant:1"}
		if *set != want {
			t.Errorf("SetSettings returned %+v, want %+v (the ShopNo given is the path's)", *set, want)
		}
		if got, err := s.Settings(ctx, merchant1, 1); err != nil || *got != want {
			t.Errorf("Settings after the set: %+v, %v; want %+v", got, err, want)
		}
		if c, err := s.DailyClaimCap(ctx, 1); err != nil || c != 500 {
			t.Errorf("DailyClaimCap = %d, %v; want 500", c, err)
		}
	})

	t.Run("AdminSetsAnyShop", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		set, err := s.SetSettings(t.Context(), admin, 7, quan.ShopSettings{DailyClaimCap: 3})
		if err != nil || set.DailyClaimCap != 3 || set.UpdatedBy != "admin:root" {
			t.Fatalf("an admin's set of shop 7: %+v, %v", set, err)
		}
	})

	t.Run("ErrForbidden", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		ctx := t.Context()
		for _, who := range []quan.Identity{merchant1, {Role: quan.RoleUser, UserID: 1}} {
			if _, err := s.SetSettings(ctx, who, 2, quan.ShopSettings{DailyClaimCap: 1}); quan.ErrorCode(err) != quan.EFORBIDDEN {
				t.Errorf("%s sets shop 2: %v, want forbidden", who, err)
			}
			if _, err := s.Settings(ctx, who, 2); quan.ErrorCode(err) != quan.EFORBIDDEN {
				t.Errorf("%s reads shop 2: %v, want forbidden", who, err)
			}
		}
		if _, err := s.Settings(ctx, quan.Identity{}, 1); !errors.Is(err, quan.ErrUnauthorized) {
			t.Errorf("no identity: %v, want unauthorized", err)
		}
		if got, _ := s.Store.ShopSettings(ctx, 2); got.DailyClaimCap != 0 {
			t.Errorf("shop 2's cap is %d after refused sets, want 0", got.DailyClaimCap)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		for _, n := range []int64{-1, quan.MaxDailyClaimCap + 1} {
			_, err := s.SetSettings(t.Context(), merchant1, 1, quan.ShopSettings{DailyClaimCap: n})
			var e *quan.Error
			if !errors.As(err, &e) || e.Code != quan.EINVALID || len(e.Fields) != 1 || e.Fields[0].Field != "dailyClaimCap" {
				t.Errorf("cap %d: %v, want invalid naming dailyClaimCap", n, err)
			}
		}
		if _, err := s.SetSettings(t.Context(), admin, 0, quan.ShopSettings{DailyClaimCap: 1}); quan.ErrorCode(err) != quan.EINVALID {
			t.Errorf("shop 0: %v, want invalid", err)
		}
	})

	t.Run("CapCachedForTTL", func(t *testing.T) {
		t.Parallel()
		now := at
		s, st := newShopService(t, func() time.Time { return now })
		s.CacheTTL = 10 * time.Second
		ctx := t.Context()
		if c, _ := s.DailyClaimCap(ctx, 1); c != 0 {
			t.Fatalf("cap %d, want 0", c)
		}
		// A change by another process, straight in the store: unseen for
		// the TTL, seen after.
		if err := st.PutShopSettings(ctx, &quan.ShopSettings{ShopNo: 1, DailyClaimCap: 9, UpdatedAt: at, UpdatedBy: "admin"}); err != nil {
			t.Fatal(err)
		}
		now = at.Add(9 * time.Second)
		if c, _ := s.DailyClaimCap(ctx, 1); c != 0 {
			t.Errorf("cap %d within the TTL of a read of 0, want 0 (cached)", c)
		}
		now = at.Add(10 * time.Second)
		if c, _ := s.DailyClaimCap(ctx, 1); c != 9 {
			t.Errorf("cap %d after the TTL, want 9", c)
		}
		// A change through the service is seen at once.
		if _, err := s.SetSettings(ctx, merchant1, 1, quan.ShopSettings{DailyClaimCap: 4}); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.DailyClaimCap(ctx, 1); c != 4 {
			t.Errorf("cap %d after SetSettings here, want 4", c)
		}
	})
}

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
	*claimRig
	second *quan.Template
	shops  *quan.ShopService
	spy    *shopCountingCache
	mu     sync.Mutex
	now    time.Time
}

func newShopCapRig(t *testing.T, limit int64) *shopCapRig {
	t.Helper()
	r := &shopCapRig{claimRig: newClaimRig(t, 100), now: claimAt}
	second := *r.tpl
	second.ID = 0
	second.Name = "flash two"
	if err := r.store.CreateTemplate(t.Context(), &second, "merchant:1"); err != nil {
		t.Fatal(err)
	}
	r.second = &second
	clock := func() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now }
	r.shops = &quan.ShopService{Store: r.store, Now: clock}
	r.spy = &shopCountingCache{Cache: r.cache}
	r.s.Cache, r.s.Now, r.s.Shops = r.spy, clock, r.shops
	if _, err := r.shops.SetSettings(t.Context(), merchant1, 1, quan.ShopSettings{DailyClaimCap: limit}); err != nil {
		t.Fatal(err)
	}
	// Served, so that loading the second template into the cache finds
	// no claim waiting on the bus.
	r.serve(t)
	return r
}

func (r *shopCapRig) at(t time.Time) { r.mu.Lock(); r.now = t; r.mu.Unlock() }

func (r *shopCapRig) claim(t *testing.T, template, user int64, want string) {
	t.Helper()
	c, err := r.s.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: user}, template, "")
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
		a, b := r.tpl.ID, r.second.ID
		r.claim(t, a, 1, "")
		r.claim(t, a, 2, "")
		r.claim(t, b, 1, "")
		r.claim(t, b, 2, quan.ESHOPDAILYCAP)
		r.claim(t, a, 3, quan.ESHOPDAILYCAP)
		if n := r.s.Counters.RefusedBy(quan.RefusedShopCap); n != 2 {
			t.Errorf("%d claims counted refused by the shop's cap, want 2", n)
		}
		// 23:59:59 Shanghai time is still the day; 00:00 is the next.
		day := quan.ShanghaiDay(claimAt)
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
		r.claim(t, r.tpl.ID, 1, "")
		for range 3 { // limit_reached: none of them counts
			r.claim(t, r.tpl.ID, 1, quan.ELIMIT)
		}
		r.claim(t, r.second.ID, 1, "")
		r.claim(t, r.second.ID, 2, quan.ESHOPDAILYCAP)
	})

	t.Run("FailedInTheStoreGivesBack", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 2)
		r.claim(t, r.tpl.ID, 1, "")
		// User 2 gets a coupon behind the cache's back: the cache lets its
		// claim through, the store fails it, and the count is given back.
		rec, err := r.store.IssueClaims(t.Context(), []*quan.Claim{{ID: quan.NewClaimID(r.tpl.ID, 2), TemplateID: r.tpl.ID,
			UserID: 2, Status: quan.ClaimPending, At: claimAt}}, claimAt)
		if err != nil || rec[0].Status != quan.ClaimIssued {
			t.Fatalf("issue behind the cache: %v, %v", rec, err)
		}
		r.claim(t, r.tpl.ID, 2, "")
		waitFor(t, "the claim failed and given back", func() bool { return r.s.Counters.Compensated.Load() == 1 })
		r.claim(t, r.second.ID, 3, "")
		r.claim(t, r.second.ID, 4, quan.ESHOPDAILYCAP)
	})

	t.Run("ReloadedFromTheStore", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 3)
		r.claim(t, r.tpl.ID, 1, "")
		r.claim(t, r.second.ID, 1, "")
		waitFor(t, "2 claims issued", func() bool { return r.s.Counters.Issued.Load() == 2 })
		// The cache loses everything (a restart of an in-process cache):
		// the shop's count restarts from the store's, 2.
		r.spy.Cache = inmem.NewCache()
		r.claim(t, r.tpl.ID, 2, "")
		r.claim(t, r.tpl.ID, 3, quan.ESHOPDAILYCAP)
	})

	t.Run("RetryCountsOnce", func(t *testing.T) {
		t.Parallel()
		r := newShopCapRig(t, 2)
		id := quan.Identity{Role: quan.RoleUser, UserID: 1}
		for range 3 { // the same Idempotency-Key: one claim
			if _, err := r.s.Claim(t.Context(), id, r.tpl.ID, "key-1"); err != nil {
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
			r.claim(t, r.tpl.ID, 1+u, "")
			r.claim(t, r.second.ID, 1+u, "")
		}
		if n := r.spy.shopCalls.Load() + r.spy.reservations.Load(); n != 0 {
			t.Errorf("claims of a shop without a cap made %d calls to the cache for it, want 0", n)
		}
		// A cap set in the day counts the day's claims before it, as the
		// store holds them: 10.
		waitFor(t, "10 claims issued", func() bool { return r.s.Counters.Issued.Load() == 10 })
		if _, err := r.shops.SetSettings(t.Context(), merchant1, 1, quan.ShopSettings{DailyClaimCap: 11}); err != nil {
			t.Fatal(err)
		}
		r.claim(t, r.tpl.ID, 10, "")
		r.claim(t, r.tpl.ID, 11, quan.ESHOPDAILYCAP)
		if r.spy.shopCalls.Load() == 0 {
			t.Error("claims of a capped shop made no call to the cache for it")
		}
	})
}
