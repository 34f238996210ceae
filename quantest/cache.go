package quantest

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestCache runs the conformance suite of quan.Cache: one function per
// behaviour area, each with its subtests. newCache returns a cache holding
// no template that shares nothing with any other cache it returns (for
// Redis: its own key prefix), and registers its cleanup with t.Cleanup.
// Every subtest gets its own cache and runs in parallel.
func TestCache(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Helper()
	testCacheCold(t, newCache)
	testCacheReserve(t, newCache)
	testCacheKeys(t, newCache)
	testCachePrime(t, newCache)
	testCacheState(t, newCache)
	testCacheStampedes(t, newCache)
	testCacheRepair(t, newCache)
	testCachePeriodRepair(t, newCache)
	testCachePeriods(t, newCache)
	testCachePeriodsLoaded(t, newCache)
	testCacheShopClaims(t, newCache)
}

// testCacheCold: a template not loaded is ErrCacheCold to every call
// but Release, which has nothing to give back.
func testCacheCold(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("Cold", func(t *testing.T) {
		t.Parallel()
		t.Run("ErrCacheCold", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			ctx := t.Context()
			cacheCold(t, "Reserve before Prime", func() error {
				_, err := c.Reserve(ctx, 1, "k", []int64{1}, base)
				return err
			})
			cacheCold(t, "State before Prime", func() error { _, err := c.State(ctx, 1); return err })
			cacheCold(t, "Held before Prime", func() error { _, err := c.Held(ctx, 1, 1); return err })
			cacheCold(t, "Update before Prime", func() error { return c.Update(ctx, cacheState(1, 10, 1), 1) })
			cachePrime(t, c, cacheState(1, 10, 1), nil)
			cacheCold(t, "Reserve of another template", func() error {
				_, err := c.Reserve(ctx, 2, "k", []int64{1}, base)
				return err
			})
			cacheCold(t, "State of another template", func() error { _, err := c.State(ctx, 2); return err })
			if err := c.Release(ctx, 2, "k"); err != nil {
				t.Errorf("Release of a template not loaded: %v, want nil (nothing to give back)", err)
			}
		})
	})
}

// testCacheReserve: what Reserve grants and refuses, user by user, and
// what it takes of the stock and the user counts.
func testCacheReserve(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("Reserve", func(t *testing.T) {
		t.Parallel()
		t.Run("OK", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 10, 2), []quan.Holding{{UserID: 7, Count: 1}})
			cacheReserve(t, c, 1, "k1", []int64{1, 2, 7}, base, "", "", "")
			cacheAssert(t, c, 1, 7, map[int64]int64{1: 1, 2: 1, 7: 2, 3: 0})
		})

		t.Run("Refusals", func(t *testing.T) {
			t.Parallel()
			end := base.Add(30 * 24 * time.Hour)
			for _, tc := range []struct {
				name    string
				status  quan.TemplateStatus
				limit   int64
				stock   int64
				holding int64 // of user 1
				now     time.Time
				want    quan.Refusal
			}{
				{"draft", quan.TemplateDraft, 1, 5, 0, base, quan.RefusedInactive},
				{"paused", quan.TemplatePaused, 1, 5, 0, base, quan.RefusedInactive},
				{"ended status", quan.TemplateEnded, 1, 5, 0, base, quan.RefusedInactive},
				{"paused before start", quan.TemplatePaused, 1, 5, 0, base.Add(-time.Hour), quan.RefusedInactive},
				{"before start", quan.TemplateActive, 1, 5, 0, base.Add(-time.Nanosecond), quan.RefusedNotStarted},
				{"before start and sold out", quan.TemplateActive, 1, 0, 1, base.Add(-time.Hour), quan.RefusedNotStarted},
				{"at start", quan.TemplateActive, 1, 5, 0, base, ""},
				{"just before end", quan.TemplateActive, 1, 5, 0, end.Add(-time.Nanosecond), ""},
				{"at end", quan.TemplateActive, 1, 5, 0, end, quan.RefusedEnded},
				{"after end", quan.TemplateActive, 1, 5, 1, end.Add(time.Hour), quan.RefusedEnded},
				{"limit 1 held 1", quan.TemplateActive, 1, 5, 1, base, quan.RefusedLimit},
				{"limit 1 held 1 sold out", quan.TemplateActive, 1, 0, 1, base, quan.RefusedLimit},
				{"limit 2 held 1", quan.TemplateActive, 2, 5, 1, base, ""},
				{"sold out", quan.TemplateActive, 2, 0, 0, base, quan.RefusedSoldOut},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					c := newCache(t)
					st := cacheState(1, tc.stock, tc.limit)
					st.Status = tc.status
					cachePrime(t, c, st, []quan.Holding{{UserID: 1, Count: tc.holding}})
					cacheReserve(t, c, 1, "k", []int64{1}, tc.now, tc.want)
					held, stock := tc.holding, tc.stock
					if tc.want == "" {
						held, stock = held+1, stock-1
					}
					cacheAssert(t, c, 1, stock, map[int64]int64{1: held})
				})
			}
		})

		t.Run("LimitTwoThenReached", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 5, 2), []quan.Holding{{UserID: 1, Count: 1}})
			cacheReserve(t, c, 1, "k1", []int64{1}, base, "")
			cacheReserve(t, c, 1, "k2", []int64{1}, base, quan.RefusedLimit)
			cacheAssert(t, c, 1, 4, map[int64]int64{1: 2})
		})

		t.Run("SoldOutWhenStockRunsOut", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 2, 1), nil)
			cacheReserve(t, c, 1, "k1", []int64{1, 2, 3, 1}, base, "", "", quan.RefusedSoldOut, quan.RefusedLimit)
			cacheReserve(t, c, 1, "k2", []int64{4}, base, quan.RefusedSoldOut)
			cacheAssert(t, c, 1, 0, map[int64]int64{1: 1, 2: 1, 3: 0, 4: 0})
		})

		t.Run("SameUserTwiceInBatch", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 10, 2), nil)
			cacheReserve(t, c, 1, "k", []int64{5, 5, 5, 6}, base, "", "", quan.RefusedLimit, "")
			cacheAssert(t, c, 1, 7, map[int64]int64{5: 2, 6: 1})
		})
	})
}

// testCacheKeys: a reservation's key answers as it first did, alone or
// concurrently; Release gives back what it reserved, once; Reservation
// reads its outcomes back.
func testCacheKeys(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("Key", func(t *testing.T) {
		t.Parallel()
		t.Run("Idempotent", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 3, 1), nil)
			cacheReserve(t, c, 1, "k", []int64{1, 1, 2}, base, "", quan.RefusedLimit, "")
			for range 2 {
				cacheReserve(t, c, 1, "k", []int64{1, 1, 2}, base, "", quan.RefusedLimit, "")
			}
			// Whatever the retry carries, the key answers as it first did.
			cacheReserve(t, c, 1, "k", []int64{3}, base, "", quan.RefusedLimit, "")
			cacheAssert(t, c, 1, 1, map[int64]int64{1: 1, 2: 1, 3: 0})
			// Keys are per template.
			cachePrime(t, c, cacheState(2, 3, 1), nil)
			cacheReserve(t, c, 2, "k", []int64{3}, base, "")
		})

		t.Run("IdempotentConcurrent", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 100, 1), nil)
			users := []int64{1, 2, 3}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var errs firstErrors
			for range 200 {
				wg.Go(func() {
					<-start
					got, err := c.Reserve(t.Context(), 1, "same", users, base)
					if err == nil && !slices.Equal(got, []quan.Refusal{"", "", ""}) {
						err = fmt.Errorf("outcomes %q, want all reserved", got)
					}
					if err != nil {
						if err != nil {
							errs.add(err)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			errs.report(t)
			cacheAssert(t, c, 1, 97, map[int64]int64{1: 1, 2: 1, 3: 1})
		})

		t.Run("Release", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 10, 2), []quan.Holding{{UserID: 1, Count: 1}})
			cacheReserve(t, c, 1, "a", []int64{1, 1, 2, 2}, base, "", quan.RefusedLimit, "", "")
			cacheReserve(t, c, 1, "b", []int64{3}, base, "")
			cacheAssert(t, c, 1, 6, map[int64]int64{1: 2, 2: 2, 3: 1})
			for range 2 { // the second time changes nothing
				cacheRelease(t, c, 1, "a")
				cacheAssert(t, c, 1, 9, map[int64]int64{1: 1, 2: 0, 3: 1})
			}
			cacheRelease(t, c, 1, "unknown")
			cacheAssert(t, c, 1, 9, map[int64]int64{1: 1, 2: 0, 3: 1})
			// A released key is still a key seen before.
			cacheReserve(t, c, 1, "a", []int64{1, 1, 2, 2}, base, "", quan.RefusedLimit, "", "")
			cacheAssert(t, c, 1, 9, map[int64]int64{1: 1, 2: 0, 3: 1})
			// A key that reserved nothing gives nothing back.
			cacheReserve(t, c, 1, "refused", []int64{1, 1}, base, "", quan.RefusedLimit)
			cacheRelease(t, c, 1, "refused")
			cacheRelease(t, c, 1, "refused")
			cacheAssert(t, c, 1, 9, map[int64]int64{1: 1, 3: 1})
		})

		t.Run("Reservation", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			notFound := func(template int64, key, what string) {
				t.Helper()
				if got, err := c.Reservation(t.Context(), template, key); !errors.Is(err, quan.ErrNotFound) {
					t.Errorf("Reservation %s: %q, %v; want ErrNotFound", what, got, err)
				}
			}
			notFound(1, "k", "of a template not loaded")
			cachePrime(t, c, cacheState(1, 1, 1), nil)
			notFound(1, "k", "never made")
			cacheReserve(t, c, 1, "k", []int64{1, 2}, base, "", quan.RefusedSoldOut)
			for _, what := range []string{"made", "released"} {
				got, err := c.Reservation(t.Context(), 1, "k")
				if err != nil || !slices.Equal(got, []quan.Refusal{"", quan.RefusedSoldOut}) {
					t.Errorf("Reservation %s: %q, %v; want the outcomes of the Reserve", what, got, err)
				}
				cacheRelease(t, c, 1, "k")
			}
			notFound(2, "k", "of another template")
			cachePrime(t, c, cacheState(1, 1, 1), nil)
			notFound(1, "k", "made before a Prime")
		})
	})
}

// testCachePrime: Prime replaces a template's state and counts at once,
// keeps the old ones when its holdings fail, and takes many; Load leaves
// a loaded template alone.
func testCachePrime(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("Prime", func(t *testing.T) {
		t.Parallel()
		t.Run("Replaces", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 10, 1), []quan.Holding{{UserID: 1, Count: 1}, {UserID: 2, Count: 1}})
			cacheReserve(t, c, 1, "before", []int64{3}, base, "")
			cachePrime(t, c, cacheState(1, 50, 1), []quan.Holding{{UserID: 2, Count: 1}, {UserID: 4, Count: 1}})
			cacheAssert(t, c, 1, 50, map[int64]int64{1: 0, 2: 1, 3: 0, 4: 1})
			// What was reserved before the Prime is in the store's holdings
			// or not; either way the new state must not be credited again.
			cacheRelease(t, c, 1, "before")
			cacheAssert(t, c, 1, 50, map[int64]int64{1: 0, 2: 1, 3: 0, 4: 1})
			cacheReserve(t, c, 1, "after", []int64{1, 2}, base, "", quan.RefusedLimit)
		})

		t.Run("ErrorKeepsOld", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			cachePrime(t, c, cacheState(1, 10, 1), []quan.Holding{{UserID: 1, Count: 1}})
			boom := errors.New("store went away")
			err := c.Prime(t.Context(), cacheState(1, 99, 1), func(yield func(quan.Holding, error) bool) {
				for u := range int64(25_000) {
					if !yield(quan.Holding{UserID: 100 + u, Count: 1}, nil) {
						return
					}
				}
				yield(quan.Holding{}, boom)
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Prime with a failing iterator: %v, want %v", err, boom)
			}
			cacheAssert(t, c, 1, 10, map[int64]int64{1: 1, 100: 0})
		})

		t.Run("Large", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			const n = 200_000
			var yielded atomic.Int64
			holdings := func(yield func(quan.Holding, error) bool) {
				for u := range int64(n) {
					yielded.Add(1)
					if !yield(quan.Holding{UserID: u, Count: 1 + u%2}, nil) {
						return
					}
				}
			}
			if err := c.Prime(t.Context(), cacheState(1, 1000, 2), holdings); err != nil {
				t.Fatalf("Prime of %d holdings: %v", n, err)
			}
			if got := yielded.Load(); got != n {
				t.Fatalf("Prime read %d holdings, want %d", got, n)
			}
			cacheReserve(t, c, 1, "k", []int64{0, 1, n - 2, n - 1, n, 0}, base,
				"", quan.RefusedLimit, "", quan.RefusedLimit, "", quan.RefusedLimit)
			cacheAssert(t, c, 1, 997, map[int64]int64{0: 2, 1: 2, 77_777: 2, 100_000: 1, n - 2: 2, n: 1, n + 1: 0})
		})

		t.Run("LoadLeavesALoadedTemplate", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			loaded, err := c.Load(t.Context(), cacheState(1, 10, 1), Holdings([]quan.Holding{{UserID: 1, Count: 1}}))
			if err != nil || !loaded {
				t.Fatalf("Load of a cold template = %v, %v; want loaded", loaded, err)
			}
			cacheReserve(t, c, 1, "k", []int64{2}, base, "")
			// A second loader that found the cache cold too must not undo the
			// reservation made meanwhile.
			loaded, err = c.Load(t.Context(), cacheState(1, 10, 1), Holdings(nil))
			if err != nil || loaded {
				t.Fatalf("Load of a loaded template = %v, %v; want left alone", loaded, err)
			}
			cacheAssert(t, c, 1, 9, map[int64]int64{1: 1, 2: 1})
		})
	})
}

// testCacheState: Update changes the rules and the stock by a delta, and
// State reads back what Prime and Update set, to the nanosecond.
func testCacheState(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("State", func(t *testing.T) {
		t.Parallel()
		t.Run("Update", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			st := cacheState(1, 10, 1)
			cachePrime(t, c, st, []quan.Holding{{UserID: 1, Count: 1}})
			cacheReserve(t, c, 1, "k1", []int64{2}, base, "")

			st.Status = quan.TemplatePaused
			st.Stock = 999_999 // ignored: only the delta counts
			cacheUpdate(t, c, st, +5)
			cacheAssert(t, c, 1, 14, map[int64]int64{1: 1, 2: 1})
			cacheReserve(t, c, 1, "k2", []int64{3}, base, quan.RefusedInactive)

			st.Status = quan.TemplateActive
			st.PerUserLimit = 2
			st.IssueStart = base.Add(time.Hour)
			cacheUpdate(t, c, st, -3)
			cacheReserve(t, c, 1, "k3", []int64{1}, base, quan.RefusedNotStarted)
			cacheReserve(t, c, 1, "k4", []int64{1, 1}, base.Add(time.Hour), "", quan.RefusedLimit)
			cacheAssert(t, c, 1, 10, map[int64]int64{1: 2, 2: 1})
			got, err := c.State(t.Context(), 1)
			if err != nil {
				t.Fatal(err)
			}
			want := st
			want.Stock = 10
			cacheStateEqual(t, got, want)
		})

		t.Run("ReadBack", func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			st := cacheState(42, 7, 3)
			st.ShopNo = 9
			st.IssueStart = base.Add(123456789 * time.Nanosecond)
			st.IssueEnd = base.Add(48*time.Hour + 987654321*time.Nanosecond)
			cachePrime(t, c, st, nil)
			got, err := c.State(t.Context(), 42)
			if err != nil {
				t.Fatal(err)
			}
			cacheStateEqual(t, got, st)
			cacheReserve(t, c, 42, "k", []int64{1, 1}, base.Add(time.Hour), "", "")
			got, err = c.State(t.Context(), 42)
			if err != nil {
				t.Fatal(err)
			}
			st.Stock = 5
			cacheStateEqual(t, got, st)
		})
	})
}

// testCacheStampedes: many reservations released at once never take
// more than the stock, nor more than a user's limit.
func testCacheStampedes(t *testing.T, newCache func(t *testing.T) quan.Cache) {
	t.Run("Stampede", func(t *testing.T) {
		t.Parallel()
		t.Run("SingleUser", func(t *testing.T) {
			t.Parallel()
			testCacheStampede(t, newCache(t))
		})

		t.Run("Batch", func(t *testing.T) {
			t.Parallel()
			testCacheBatchStampede(t, newCache(t))
		})
	})
}

// testCacheStampede releases M single-user Reserve calls at once on a
// stock of N with limit 1; a fifth of the calls come from users who call
// more than once.
func testCacheStampede(t *testing.T, c quan.Cache) {
	const n, m, repeaters = 1_000, 10_000, 500
	cachePrime(t, c, cacheState(1, n, 1), nil)
	userOf := func(i int) int64 {
		if i < m*8/10 {
			return int64(i)
		}
		return int64(i % repeaters) // the same few users again, 4 more calls each
	}
	byUser := make([]atomic.Int64, m)
	var reserved atomic.Int64
	var errs firstErrors
	stop := watchStock(t, c, 1)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range m {
		wg.Go(func() {
			<-start
			u := userOf(i)
			got, err := c.Reserve(t.Context(), 1, fmt.Sprintf("call-%d", i), []int64{u}, base)
			switch {
			case err != nil:
			case len(got) != 1:
				err = fmt.Errorf("%d outcomes for 1 user", len(got))
			case got[0] == "":
				reserved.Add(1)
				byUser[u].Add(1)
			case got[0] != quan.RefusedLimit && got[0] != quan.RefusedSoldOut:
				err = fmt.Errorf("user %d refused with %q", u, got[0])
			}
			if err != nil {
				errs.add(err)
			}
		})
	}
	close(start)
	wg.Wait()
	stop()
	errs.report(t)
	cacheStampedeAssert(t, c, 1, n, reserved.Load(), byUser, 1)
}

// testCacheBatchStampede has goroutines reserve overlapping 100-user
// batches on a stock of N with limit 2.
func testCacheBatchStampede(t *testing.T, c quan.Cache) {
	const n, batches, size, pool = 1_000, 100, 100, 3_000
	cachePrime(t, c, cacheState(1, n, 2), nil)
	byUser := make([]atomic.Int64, pool)
	var reserved atomic.Int64
	var errs firstErrors
	stop := watchStock(t, c, 1)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for b := range batches {
		wg.Go(func() {
			users := make([]int64, size)
			for i := range users {
				users[i] = int64((b*37 + i*53) % pool) // batches overlap, users repeat within some
			}
			<-start
			got, err := c.Reserve(t.Context(), 1, fmt.Sprintf("batch-%d", b), users, base)
			if err == nil && len(got) != size {
				err = fmt.Errorf("%d outcomes for %d users", len(got), size)
			}
			for i := range got {
				switch got[i] {
				case "":
					reserved.Add(1)
					byUser[users[i]].Add(1)
				case quan.RefusedLimit, quan.RefusedSoldOut:
				default:
					err = fmt.Errorf("user %d refused with %q", users[i], got[i])
				}
			}
			if err != nil {
				errs.add(err)
			}
		})
	}
	close(start)
	wg.Wait()
	stop()
	errs.report(t)
	cacheStampedeAssert(t, c, 1, n, reserved.Load(), byUser, 2)
}

func cacheStampedeAssert(t *testing.T, c quan.Cache, tpl, n, reserved int64, byUser []atomic.Int64, limit int64) {
	t.Helper()
	if reserved != n {
		t.Errorf("%d reservations granted, want exactly the stock of %d", reserved, n)
	}
	var held int64
	for u := range byUser {
		got := byUser[u].Load()
		if got > limit {
			t.Errorf("user %d got %d, over the limit of %d", u, got, limit)
		}
		if got == 0 {
			continue
		}
		h, err := c.Held(t.Context(), tpl, int64(u))
		if err != nil {
			t.Fatal(err)
		}
		if h != got {
			t.Errorf("user %d: Held says %d, the calls reserved %d", u, h, got)
		}
		held += h
	}
	if held != n {
		t.Errorf("users hold %d in all, want %d", held, n)
	}
	st, err := c.State(t.Context(), tpl)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stock != 0 {
		t.Errorf("stock left is %d, want 0", st.Stock)
	}
}

// watchStock polls the stock of tpl until stop is called, failing the test
// if it is ever seen below zero.
func watchStock(t *testing.T, c quan.Cache, tpl int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			st, err := c.State(t.Context(), tpl)
			if err != nil {
				t.Errorf("State during the stampede: %v", err)
				return
			}
			if st.Stock < 0 {
				t.Errorf("stock seen at %d during the stampede", st.Stock)
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// cacheState returns an active template state whose issue window runs 30
// days from base.
func cacheState(id, stock, limit int64) quan.TemplateState {
	return quan.TemplateState{ID: id, ShopNo: 1, Status: quan.TemplateActive, IssueStart: base,
		IssueEnd: base.Add(30 * 24 * time.Hour), PerUserLimit: limit, Stock: stock}
}

// Holdings returns hs as the iterator Prime takes.
func Holdings(hs []quan.Holding) iter.Seq2[quan.Holding, error] {
	return func(yield func(quan.Holding, error) bool) {
		for _, h := range hs {
			if !yield(h, nil) {
				return
			}
		}
	}
}

func cachePrime(t *testing.T, c quan.Cache, st quan.TemplateState, hs []quan.Holding) {
	t.Helper()
	if err := c.Prime(t.Context(), st, Holdings(hs)); err != nil {
		t.Fatalf("Prime(%d): %v", st.ID, err)
	}
}

func cacheUpdate(t *testing.T, c quan.Cache, st quan.TemplateState, delta int64) {
	t.Helper()
	if err := c.Update(t.Context(), st, delta); err != nil {
		t.Fatalf("Update(%d, %+d): %v", st.ID, delta, err)
	}
}

func cacheReserve(t *testing.T, c quan.Cache, tpl int64, key string, users []int64, now time.Time, want ...quan.Refusal) {
	t.Helper()
	got, err := c.Reserve(t.Context(), tpl, key, users, now)
	if err != nil {
		t.Fatalf("Reserve(%d, %q, %v): %v", tpl, key, users, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Reserve(%d, %q, %v) = %q, want %q", tpl, key, users, got, want)
	}
}

func cacheRelease(t *testing.T, c quan.Cache, tpl int64, key string) {
	t.Helper()
	if err := c.Release(t.Context(), tpl, key); err != nil {
		t.Fatalf("Release(%d, %q): %v", tpl, key, err)
	}
}

// cacheAssert checks the stock of tpl and the count each listed user holds.
func cacheAssert(t *testing.T, c quan.Cache, tpl, stock int64, held map[int64]int64) {
	t.Helper()
	st, err := c.State(t.Context(), tpl)
	if err != nil {
		t.Fatalf("State(%d): %v", tpl, err)
	}
	if st.Stock != stock {
		t.Errorf("stock is %d, want %d", st.Stock, stock)
	}
	for u, want := range held {
		got, err := c.Held(t.Context(), tpl, u)
		if err != nil {
			t.Fatalf("Held(%d, %d): %v", tpl, u, err)
		}
		if got != want {
			t.Errorf("user %d holds %d, want %d", u, got, want)
		}
	}
}

func cacheStateEqual(t *testing.T, got, want quan.TemplateState) {
	t.Helper()
	if got.ID != want.ID || got.ShopNo != want.ShopNo || got.Status != want.Status ||
		!got.IssueStart.Equal(want.IssueStart) || !got.IssueEnd.Equal(want.IssueEnd) ||
		got.PerUserLimit != want.PerUserLimit || got.Stock != want.Stock {
		t.Errorf("State = %+v, want %+v", got, want)
	}
}

func cacheCold(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := f(); !errors.Is(err, quan.ErrCacheCold) {
		t.Errorf("%s: error %v, want ErrCacheCold", what, err)
	}
}
