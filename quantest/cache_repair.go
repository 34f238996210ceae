package quantest

import (
	"iter"
	"maps"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// testCacheRepair: what Reconciler reads of a cache (Holdings) and the
// compare-and-set corrections it makes (SwapStock, SwapHeld).
func testCacheRepair(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("Repair", func(t *testing.T) {
		t.Parallel()
		t.Run("ErrCacheCold", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			ctx := t.Context()
			cacheCold(t, "Holdings before Prime", func() error {
				for _, err := range c.Holdings(ctx, 1) {
					return err
				}
				return nil
			})
			cacheCold(t, "SwapStock before Prime", func() error { _, err := c.SwapStock(ctx, 1, 0, 1); return err })
			cacheCold(t, "SwapHeld before Prime", func() error {
				_, err := c.SwapHeld(ctx, 1, []quan.HeldSwap{{UserID: 1, Old: 0, Count: 1}})
				return err
			})
		})
		t.Run("Holdings", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 10, 3), []quan.Holding{{UserID: 7, Count: 2}, {UserID: 8, Count: 1}})
			cachePrime(t, c, cacheState(2, 10, 3), []quan.Holding{{UserID: 7, Count: 3}})
			cacheReserve(t, c, 1, "a", []int64{9, 7}, base, "", "")
			cacheReserve(t, c, 1, "b", []int64{8}, base, "")
			cacheRelease(t, c, 1, "b")
			cacheRelease(t, c, 1, "a")
			cacheReserve(t, c, 1, "c", []int64{10}, base, "")
			want := map[int64]int64{7: 2, 8: 1, 10: 1} // 9 gave its coupon back: no entry
			if got := cacheHoldings(t, c, 1); !maps.Equal(got, want) {
				t.Errorf("Holdings = %v, want %v", got, want)
			}
			if got := cacheHoldings(t, c, 2); !maps.Equal(got, map[int64]int64{7: 3}) {
				t.Errorf("Holdings of another template = %v, want map[7:3]", got)
			}
		})
		t.Run("SwapStock", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			ctx := t.Context()
			cachePrime(t, c, cacheState(1, 10, 3), nil)
			cacheReserve(t, c, 1, "a", []int64{1}, base, "")
			if ok, err := c.SwapStock(ctx, 1, 10, 20); err != nil || ok {
				t.Fatalf("SwapStock from a stale 10 = %v, %v; want false (the stock is 9)", ok, err)
			}
			cacheAssert(t, c, 1, 9, nil)
			if ok, err := c.SwapStock(ctx, 1, 9, 4); err != nil || !ok {
				t.Fatalf("SwapStock(9 → 4) = %v, %v; want true", ok, err)
			}
			cacheAssert(t, c, 1, 4, map[int64]int64{1: 1})
			// The snapshot stays, and reservations go on from the new stock.
			st, err := c.State(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := cacheState(1, 4, 3)
			cacheStateEqual(t, st, want)
			cacheReserve(t, c, 1, "b", []int64{2}, base, "")
			cacheAssert(t, c, 1, 3, nil)
			if ok, err := c.SwapStock(ctx, 1, 3, 0); err != nil || !ok {
				t.Fatalf("SwapStock(3 → 0) = %v, %v; want true", ok, err)
			}
			cacheReserve(t, c, 1, "c", []int64{3}, base, quan.RefusedSoldOut)
		})
		t.Run("SwapHeld", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			ctx := t.Context()
			cachePrime(t, c, cacheState(1, 10, 2), []quan.Holding{{UserID: 1, Count: 2}, {UserID: 2, Count: 1}})
			n, err := c.SwapHeld(ctx, 1, []quan.HeldSwap{
				{UserID: 1, Old: 2, Count: 1}, // holds 1 now: may claim again
				{UserID: 2, Old: 5, Count: 0}, // stale: stays 1
				{UserID: 3, Old: 0, Count: 2}, // not counted before: now at the limit
				{UserID: 4, Old: 0, Count: 0}, // nothing to do, but it was 0
			})
			if err != nil || n != 3 {
				t.Fatalf("SwapHeld = %d, %v; want 3 swaps", n, err)
			}
			cacheAssert(t, c, 1, 10, map[int64]int64{1: 1, 2: 1, 3: 2, 4: 0})
			cacheReserve(t, c, 1, "a", []int64{1, 3}, base, "", quan.RefusedLimit)
			if n, err := c.SwapHeld(ctx, 1, []quan.HeldSwap{{UserID: 2, Old: 1, Count: 0}}); err != nil || n != 1 {
				t.Fatalf("SwapHeld to 0 = %d, %v; want 1", n, err)
			}
			if got, want := cacheHoldings(t, c, 1), map[int64]int64{1: 2, 3: 2}; !maps.Equal(got, want) {
				t.Errorf("Holdings = %v, want %v (a count of 0 is no entry)", got, want)
			}
		})
	})
}

// cacheHoldings returns what Holdings yields of tpl, by user.
func cacheHoldings(t *testing.T, c quan.Cache, tpl int64) map[int64]int64 {
	t.Helper()
	return countsOf(t, "Holdings", c.Holdings(t.Context(), tpl))
}

// cachePeriodHoldings returns what PeriodHoldings yields of tpl in p.
func cachePeriodHoldings(t *testing.T, c quan.Cache, tpl int64, p quan.Period) map[int64]int64 {
	t.Helper()
	return countsOf(t, "PeriodHoldings", c.PeriodHoldings(t.Context(), tpl, p))
}

func countsOf(t *testing.T, what string, hs iter.Seq2[quan.Holding, error]) map[int64]int64 {
	t.Helper()
	got := map[int64]int64{}
	for h, err := range hs {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if _, dup := got[h.UserID]; dup {
			t.Errorf("%s yields user %d twice", what, h.UserID)
		}
		got[h.UserID] = h.Count
	}
	return got
}

// testCachePeriodRepair: what Reconciler reads of a cache's period counts
// (PeriodHoldings) and the compare-and-set corrections it makes of them
// (SwapPeriodHeld), which the period limits then check.
func testCachePeriodRepair(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("PeriodRepair", func(t *testing.T) {
		t.Parallel()
		c := newCache(t)
		ctx := t.Context()
		monday := quan.ShanghaiWeekStart(quan.ShanghaiWeek(base) + 1)
		mon, week := quan.PeriodsOf(monday)
		tue, _ := quan.PeriodsOf(monday.Add(24 * time.Hour))
		cacheCold(t, "PeriodHoldings before Prime", func() error {
			for _, err := range c.PeriodHoldings(ctx, 1, mon) {
				return err
			}
			return nil
		})
		cacheCold(t, "SwapPeriodHeld before Prime", func() error {
			_, err := c.SwapPeriodHeld(ctx, 1, mon, []quan.HeldSwap{{UserID: 1, Old: 0, Count: 1}})
			return err
		})

		st := cacheState(1, 100, 10)
		st.PerUserDaily, st.PerUserWeekly = 2, 3
		cachePrime(t, c, st, []quan.Holding{{UserID: 7, Count: 1, Day: 1, Week: 1, PeriodDay: mon.N}})
		cacheReserve(t, c, 1, "a", []int64{7, 8}, monday.Add(time.Hour), "", "")
		cacheReserve(t, c, 1, "b", []int64{9}, monday.Add(2*time.Hour), "")
		cacheRelease(t, c, 1, "b")
		cacheReserve(t, c, 1, "c", []int64{8}, monday.Add(25*time.Hour), "")
		for _, tt := range []struct {
			name string
			p    quan.Period
			want map[int64]int64
		}{
			{"Monday", mon, map[int64]int64{7: 2, 8: 1}},
			{"Tuesday", tue, map[int64]int64{8: 1}},
			{"Week", week, map[int64]int64{7: 2, 8: 2}},
			{"NextWeek", quan.Period{Week: true, N: week.N + 1}, map[int64]int64{}},
		} {
			if got := cachePeriodHoldings(t, c, 1, tt.p); !maps.Equal(got, tt.want) {
				t.Errorf("PeriodHoldings(%s) = %v, want %v", tt.name, got, tt.want)
			}
		}

		n, err := c.SwapPeriodHeld(ctx, 1, mon, []quan.HeldSwap{
			{UserID: 7, Old: 2, Count: 1}, // may receive one more on Monday
			{UserID: 8, Old: 5, Count: 0}, // stale: stays 1
			{UserID: 9, Old: 0, Count: 2}, // at Monday's limit
		})
		if err != nil || n != 2 {
			t.Fatalf("SwapPeriodHeld(Monday) = %d, %v; want 2 swaps", n, err)
		}
		if got, want := cachePeriodHoldings(t, c, 1, mon), map[int64]int64{7: 1, 8: 1, 9: 2}; !maps.Equal(got, want) {
			t.Errorf("PeriodHoldings(Monday) after the swaps = %v, want %v", got, want)
		}
		if got, want := cachePeriodHoldings(t, c, 1, week), map[int64]int64{7: 2, 8: 2}; !maps.Equal(got, want) {
			t.Errorf("PeriodHoldings(week) after Monday's swaps = %v, want %v: another period", got, want)
		}
		// The limits check the swapped counts: 9 is at Monday's limit, 7
		// may have one more that day.
		cacheReserve(t, c, 1, "d", []int64{9, 7}, monday.Add(3*time.Hour), quan.RefusedDaily, "")
		if n, err := c.SwapPeriodHeld(ctx, 1, week, []quan.HeldSwap{{UserID: 8, Old: 2, Count: 3}}); err != nil || n != 1 {
			t.Fatalf("SwapPeriodHeld(week) = %d, %v; want 1", n, err)
		}
		cacheReserve(t, c, 1, "e", []int64{8}, monday.Add(49*time.Hour), quan.RefusedWeekly)
		if n, err := c.SwapPeriodHeld(ctx, 1, week, []quan.HeldSwap{{UserID: 8, Old: 3, Count: 0}}); err != nil || n != 1 {
			t.Fatalf("SwapPeriodHeld(week, to 0) = %d, %v; want 1", n, err)
		}
		cacheReserve(t, c, 1, "f", []int64{8}, monday.Add(49*time.Hour), "")
	})
}
