package quantest

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// testCachePeriods: the per-user daily and weekly limits, days and weeks
// in Asia/Shanghai from Monday, checked in the reservation's atomic step,
// given back by Release, before sold_out in the order of the refusals.
func testCachePeriods(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("Periods", func(t *testing.T) {
		t.Parallel()
		c := newCache(t)
		st := cacheState(1, 100, 10)
		st.PerUserDaily, st.PerUserWeekly = 1, 2
		cachePrime(t, c, st, nil)
		got, err := c.State(t.Context(), 1)
		if err != nil || got.PerUserDaily != 1 || got.PerUserWeekly != 2 {
			t.Fatalf("State = %+v, %v; want the period limits 1 a day, 2 a week", got, err)
		}
		monday := quan.ShanghaiWeekStart(quan.ShanghaiWeek(base) + 1)
		at := func(d time.Duration) time.Time { return monday.Add(d) }
		ok := quan.Refusal("")

		cacheReserve(t, c, 1, "k1", []int64{1, 2}, at(-time.Minute), ok, ok) // Sunday 23:59
		cacheReserve(t, c, 1, "k2", []int64{1}, at(-30*time.Second), quan.RefusedDaily)
		cacheReserve(t, c, 1, "k3", []int64{1}, at(time.Minute), ok) // Monday 00:01
		cacheReserve(t, c, 1, "k4", []int64{1}, at(time.Minute), quan.RefusedDaily)
		cacheRelease(t, c, 1, "k3") // gives the day's count back
		cacheReserve(t, c, 1, "k5", []int64{1}, at(2*time.Minute), ok)
		cacheReserve(t, c, 1, "k6", []int64{1}, at(24*time.Hour+time.Minute), ok) // Tuesday
		cacheReserve(t, c, 1, "k7", []int64{1}, at(48*time.Hour+time.Minute), quan.RefusedWeekly)
		stock := int64(100 - 4)
		if lr, isLR := c.(quan.LimitedReserver); isLR {
			for i, want := range []quan.Refusal{ok, quan.RefusedDaily} {
				key := quan.NewClaimID(1, 5)
				refused, _, out, err := lr.ReserveLimited(t.Context(), 1, key, []int64{5}, at(49*time.Hour), nil)
				if err != nil || refused >= 0 || len(out) != 1 || out[0] != want {
					t.Fatalf("ReserveLimited %d = %d, %q, %v; want %q", i, refused, out, err, want)
				}
			}
			stock--
		}
		cacheAssert(t, c, 1, stock, map[int64]int64{1: 3, 2: 1})
		// Sold out: the period limits still say why first.
		cacheUpdate(t, c, st, -stock)
		cacheReserve(t, c, 1, "k8", []int64{1, 3}, at(48*time.Hour+2*time.Minute), quan.RefusedWeekly, quan.RefusedSoldOut)
	})
}

// testCachePeriodsLoaded: the period counts a Load or Prime takes from
// holdings (Holding.Day, Week of Holding.PeriodDay) refuse as the
// reservations' own do, so a cache loaded after a loss refuses a user
// over a period limit itself; a Prime replaces the counts of the
// holdings' day and week and leaves those of other days.
func testCachePeriodsLoaded(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	monday := quan.ShanghaiWeekStart(quan.ShanghaiWeek(base) + 1)
	at := func(d time.Duration) time.Time { return monday.Add(d) }
	day := quan.ShanghaiDay(monday)
	ok := quan.Refusal("")
	periodic := func() quan.TemplateState {
		st := cacheState(1, 100, 5)
		st.PerUserDaily, st.PerUserWeekly = 2, 3
		return st
	}
	t.Run("PeriodsLoaded", func(t *testing.T) {
		t.Parallel()
		t.Run("Load", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			loaded, err := c.Load(t.Context(), periodic(), Holdings([]quan.Holding{
				{UserID: 1, Count: 3, Day: 2, Week: 2, PeriodDay: day}, // the daily limit
				{UserID: 2, Count: 3, Day: 0, Week: 3, PeriodDay: day}, // the weekly limit
				{UserID: 3, Count: 1, Day: 1, Week: 1, PeriodDay: day},
				{UserID: 4, Count: 2, PeriodDay: day}, // none this week
			}))
			if err != nil || !loaded {
				t.Fatalf("Load = %v, %v; want loaded", loaded, err)
			}
			noon := at(12 * time.Hour)
			cacheReserve(t, c, 1, "k1", []int64{1, 2, 3, 4}, noon, quan.RefusedDaily, quan.RefusedWeekly, ok, ok)
			cacheReserve(t, c, 1, "k2", []int64{3, 4}, noon, quan.RefusedDaily, ok)
			if lr, isLR := c.(quan.LimitedReserver); isLR {
				refused, _, out, err := lr.ReserveLimited(t.Context(), 1, quan.NewClaimID(1, 1), []int64{1}, noon, nil)
				if err != nil || refused >= 0 || len(out) != 1 || out[0] != quan.RefusedDaily {
					t.Fatalf("ReserveLimited = %d, %q, %v; want %q", refused, out, err, quan.RefusedDaily)
				}
			}
			// Tuesday: the day's counts start again, the week's go on.
			tuesday := at(36 * time.Hour)
			cacheReserve(t, c, 1, "k3", []int64{1, 1, 2}, tuesday, ok, quan.RefusedWeekly, quan.RefusedWeekly)
			cacheRelease(t, c, 1, "k3") // gives back to the loaded week
			cacheReserve(t, c, 1, "k4", []int64{1}, tuesday, ok)
			cacheAssert(t, c, 1, 100-4, map[int64]int64{1: 4, 2: 3, 3: 2, 4: 4})
		})
		t.Run("PrimeReplacesTheDay", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, periodic(), nil)
			sunday := at(-time.Hour)
			cacheReserve(t, c, 1, "k1", []int64{1, 1, 2, 2}, sunday, ok, ok, ok, ok)
			cacheReserve(t, c, 1, "k2", []int64{1, 2}, at(time.Hour), ok, ok)
			// The store holds user 1's coupons of Monday, none of user 2's:
			// its counts of Monday and that week replace the cache's.
			cachePrime(t, c, periodic(), []quan.Holding{
				{UserID: 1, Count: 3, Day: 1, Week: 1, PeriodDay: day},
				{UserID: 2, Count: 2, PeriodDay: day},
			})
			cacheReserve(t, c, 1, "k3", []int64{1, 1, 2, 2, 2}, at(2*time.Hour), ok, quan.RefusedDaily, ok, ok, quan.RefusedDaily)
			// Sunday is of another day and week: its counts stay.
			cacheReserve(t, c, 1, "k4", []int64{1, 2}, sunday, quan.RefusedDaily, quan.RefusedDaily)
		})
		t.Run("WithoutPeriods", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			// Holdings without period counts leave the cache's.
			cachePrime(t, c, periodic(), nil)
			cacheReserve(t, c, 1, "k1", []int64{1, 1}, at(time.Hour), ok, ok)
			cachePrime(t, c, periodic(), []quan.Holding{{UserID: 1, Count: 2}})
			cacheReserve(t, c, 1, "k2", []int64{1}, at(2*time.Hour), quan.RefusedDaily)
			// A template without period limits ignores period counts.
			st := cacheState(2, 10, 5)
			cachePrime(t, c, st, []quan.Holding{{UserID: 1, Count: 1, Day: 3, Week: 3, PeriodDay: day}})
			st.PerUserDaily = 1
			cacheUpdate(t, c, st, 0)
			cacheReserve(t, c, 2, "k1", []int64{1, 1}, at(time.Hour), ok, quan.RefusedDaily)
		})
		t.Run("ErrMixedDays", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, periodic(), []quan.Holding{{UserID: 9, Count: 1}})
			err := c.Prime(t.Context(), periodic(), Holdings([]quan.Holding{
				{UserID: 1, Count: 1, Day: 1, Week: 1, PeriodDay: day},
				{UserID: 2, Count: 1, Day: 1, Week: 1, PeriodDay: day + 1},
			}))
			if quan.ErrorCode(err) != quan.EINVALID {
				t.Fatalf("Prime with the counts of two days: %v, want invalid", err)
			}
			cacheAssert(t, c, 1, 100, map[int64]int64{9: 1}) // the old state stays
		})
	})
}
