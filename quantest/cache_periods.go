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
