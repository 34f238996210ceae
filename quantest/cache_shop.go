package quantest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quanhq/quan"
)

// testCacheShopClaims: the count of a shop's claims a day
// (ShopClaimsTake, ShopClaimsLoad, ShopClaimsGive), apart from every
// template's state.
func testCacheShopClaims(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("ShopClaims", func(t *testing.T) {
		t.Parallel()
		const shop, day = 7, 20_000

		t.Run("ErrCacheCold", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			ctx := t.Context()
			cacheCold(t, "ShopClaimsTake before a load", func() error { _, err := c.ShopClaimsTake(ctx, shop, day, 5); return err })
			if err := c.ShopClaimsGive(ctx, shop, day, "k"); err != nil {
				t.Errorf("ShopClaimsGive without a count: %v, want nil", err)
			}
			shopLoad(t, c, shop, day, 0)
			cacheCold(t, "ShopClaimsTake of the next day", func() error { _, err := c.ShopClaimsTake(ctx, shop, day+1, 5); return err })
			cacheCold(t, "ShopClaimsTake of another shop", func() error { _, err := c.ShopClaimsTake(ctx, shop+1, day, 5); return err })
			// A template of the same number is not the shop.
			cachePrime(t, c, cacheState(shop+1, 10, 1), nil)
			cacheCold(t, "ShopClaimsTake of a shop numbered as a loaded template", func() error {
				_, err := c.ShopClaimsTake(ctx, shop+1, day, 5)
				return err
			})
		})

		t.Run("TakeUpToLimit", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			shopLoad(t, c, shop, day, 2)
			shopTake(t, c, shop, day, 4, true)
			shopTake(t, c, shop, day, 4, true)
			shopTake(t, c, shop, day, 4, false)
			// A higher limit lets more through: the cap is the caller's,
			// read at each take.
			shopTake(t, c, shop, day, 5, true)
			shopTake(t, c, shop, day, 5, false)
		})

		t.Run("LoadKeepsACount", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			shopLoad(t, c, shop, day, 1)
			shopTake(t, c, shop, day, 2, true)
			shopLoad(t, c, shop, day, 0) // another caller that found it cold
			shopTake(t, c, shop, day, 2, false)
		})

		t.Run("Give", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			ctx := t.Context()
			shopLoad(t, c, shop, day, 0)
			shopTake(t, c, shop, day, 3, true)
			shopTake(t, c, shop, day, 3, true)
			shopTake(t, c, shop, day, 3, true)
			shopTake(t, c, shop, day, 3, false)
			for range 2 { // a failure settled twice gives back once
				if err := c.ShopClaimsGive(ctx, shop, day, "claim-1"); err != nil {
					t.Fatal(err)
				}
			}
			shopTake(t, c, shop, day, 3, true)
			shopTake(t, c, shop, day, 3, false)
			// Without a key, every give gives back; never below zero.
			for range 5 {
				if err := c.ShopClaimsGive(ctx, shop, day, ""); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				shopTake(t, c, shop, day, 3, true)
			}
			shopTake(t, c, shop, day, 3, false)
			// Another day's give leaves this one alone.
			shopLoad(t, c, shop, day+1, 0)
			if err := c.ShopClaimsGive(ctx, shop, day+1, ""); err != nil {
				t.Fatal(err)
			}
			shopTake(t, c, shop, day, 3, false)
		})

		t.Run("Stampede", func(t *testing.T) {
			t.Parallel()
			const limit, callers = 50, 200
			c := newCache(t)
			shopLoad(t, c, shop, day, 0)
			var took atomic.Int64
			var errs firstErrors
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					<-start
					ok, err := c.ShopClaimsTake(t.Context(), shop, day, limit)
					if err != nil {
						errs.add(err)
					}
					if ok {
						took.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			errs.report(t)
			if n := took.Load(); n != limit {
				t.Errorf("%d concurrent takes against a cap of %d: %d took, want exactly %d", callers, limit, n, limit)
			}
			shopTake(t, c, shop, day, limit, false)
		})
	})
}

func shopLoad(t *testing.T, c quan.Cache, shop, day, n int64) {
	t.Helper()
	if err := c.ShopClaimsLoad(t.Context(), shop, day, n); err != nil {
		t.Fatalf("ShopClaimsLoad(%d, %d, %d): %v", shop, day, n, err)
	}
}

func shopTake(t *testing.T, c quan.Cache, shop, day, limit int64, want bool) {
	t.Helper()
	ok, err := c.ShopClaimsTake(t.Context(), shop, day, limit)
	if err != nil {
		if errors.Is(err, quan.ErrCacheCold) {
			t.Fatalf("ShopClaimsTake(%d, %d, %d): cold", shop, day, limit)
		}
		t.Fatalf("ShopClaimsTake(%d, %d, %d): %v", shop, day, limit, err)
	}
	if ok != want {
		t.Fatalf("ShopClaimsTake(%d, %d, %d) = %v, want %v", shop, day, limit, ok, want)
	}
}
