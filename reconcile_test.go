package quan_test

import (
	"context"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// reconcileRigs are the claim rigs Reconciler is tested on: the
// in-process cache, and Redis with its claim ledger (skipped without
// QUAN_TEST_REDIS; CI sets it).
var reconcileRigs = map[string]func(t *testing.T, stock int64) *claimRig{
	"InProcess": newClaimRig,
	"Redis": func(t *testing.T, stock int64) *claimRig {
		r, _, _ := newLedgerRig(t, stock)
		return r
	},
}

// reconciler returns a Reconciler of the rig's cache, store and bus, with
// no wait between its readings.
func (r *claimRig) reconciler() *quan.Reconciler {
	return &quan.Reconciler{Templates: r.store, Tasks: r.store, Coupons: r.store, Cache: r.cache, Ledger: r.s.Ledger,
		Buses: []quan.Bus{r.bus}, Local: []quan.InFlight{r.s}, Settle: -1}
}

// claim claims a coupon for each user through the service.
func (r *claimRig) claim(t *testing.T, users ...int64) {
	t.Helper()
	for _, u := range users {
		if _, err := r.s.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: u}, r.tpl.ID, ""); err != nil {
			t.Fatalf("claim for user %d: %v", u, err)
		}
	}
}

// settled waits until nothing is in flight for the rig's template.
func (r *claimRig) settled(t *testing.T, rec *quan.Reconciler) {
	t.Helper()
	waitFor(t, "the claims in flight to settle", func() bool {
		busy, err := rec.Busy(t.Context(), r.tpl.ID)
		return err == nil && !busy
	})
}

type reconcileWant struct {
	stock, templates, users, repairs, ok int64
}

func assertReconcile(t *testing.T, rec *quan.Reconciler, want reconcileWant) {
	t.Helper()
	c := &rec.Counters
	got := reconcileWant{c.StockDrift.Load(), c.DriftTemplates.Load(), c.HeldDriftUsers.Load(), c.Repairs.Load(), c.RunsOK.Load()}
	if got != want {
		t.Errorf("counters: %+v, want %+v", got, want)
	}
	if n := c.RunsFailed.Load(); n != 0 {
		t.Errorf("%d runs failed", n)
	}
}

// TestReconcileRepairsDrift: drift injected into the cache (stock given
// away, a count lost, a count of a user who holds nothing) is reported
// and corrected from the store; the next run finds none.
func TestReconcileRepairsDrift(t *testing.T) {
	for name, newRig := range reconcileRigs {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, 10)
			r.serve(t)
			rec := r.reconciler()
			r.claim(t, 1, 2)
			r.settled(t, rec)
			r.assertStock(t, 8)

			ctx := t.Context()
			if ok, err := r.cache.SwapStock(ctx, r.tpl.ID, 8, 5); err != nil || !ok {
				t.Fatalf("inject stock drift: %v %v", ok, err)
			}
			if n, err := r.cache.SwapHeld(ctx, r.tpl.ID, []quan.HeldSwap{{UserID: 1, Old: 1, Count: 0}, {UserID: 99, Old: 0, Count: 1}}); err != nil || n != 2 {
				t.Fatalf("inject holding drift: %d %v", n, err)
			}
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{stock: 3, templates: 1, users: 2, repairs: 1, ok: 1})
			r.assertStock(t, 8)
			for u, want := range map[int64]int64{1: 1, 2: 1, 99: 0} {
				if n, err := r.cache.Held(ctx, r.tpl.ID, u); err != nil || n != want {
					t.Errorf("user %d holds %d in the cache (%v), want %d", u, n, err, want)
				}
			}
			// User 1 is at the limit again: the repaired cache refuses.
			if _, err := r.s.Claim(ctx, quan.Identity{Role: quan.RoleUser, UserID: 1}, r.tpl.ID, ""); quan.ErrorCode(err) != quan.ELIMIT {
				t.Errorf("claim of user 1 after repair: %v, want limit_reached", err)
			}

			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{repairs: 1, ok: 2})
		})
	}
}

// TestReconcileRepairsPeriodDrift: the counts of the day and the week
// the period limits check, drifted in the cache (a claim of today
// forgotten, one counted that was never made), are reported and
// corrected from the store, and the limits then refuse and admit as the
// store would.
func TestReconcileRepairsPeriodDrift(t *testing.T) {
	for name, newRig := range reconcileRigs {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, 10)
			ctx := t.Context()
			tpl, err := r.store.UpdateTemplate(ctx, 1, r.tpl.ID, "test", "limits", func(t *quan.Template) error {
				t.PerUserLimit, t.PerUserDaily, t.PerUserWeekly = 5, 1, 2
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			r.tpl = tpl
			r.serve(t)
			rec := r.reconciler()
			rec.Now = func() time.Time { return claimAt }
			r.claim(t, 1)
			r.settled(t, rec)
			day, week := quan.PeriodsOf(claimAt)

			if n, err := r.cache.SwapPeriodHeld(ctx, tpl.ID, day, []quan.HeldSwap{{UserID: 1, Old: 1, Count: 0}, {UserID: 2, Old: 0, Count: 1}}); err != nil || n != 2 {
				t.Fatalf("inject day drift: %d %v", n, err)
			}
			if n, err := r.cache.SwapPeriodHeld(ctx, tpl.ID, week, []quan.HeldSwap{{UserID: 3, Old: 0, Count: 2}}); err != nil || n != 1 {
				t.Fatalf("inject week drift: %d %v", n, err)
			}
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{templates: 1, users: 3, repairs: 1, ok: 1})
			for _, p := range []quan.Period{day, week} {
				got := map[int64]int64{}
				for h, err := range r.cache.PeriodHoldings(ctx, tpl.ID, p) {
					if err != nil {
						t.Fatal(err)
					}
					got[h.UserID] = h.Count
				}
				if len(got) != 1 || got[1] != 1 {
					t.Errorf("the cache's counts of %+v after repair: %v, want user 1's one claim", p, got)
				}
			}
			claim := func(user int64) error {
				_, err := r.s.Claim(ctx, quan.Identity{Role: quan.RoleUser, UserID: user}, tpl.ID, "")
				return err
			}
			if err := claim(1); quan.ErrorCode(err) != quan.EDAILYLIMIT {
				t.Errorf("claim of user 1 after repair: %v, want %s", err, quan.EDAILYLIMIT)
			}
			for _, u := range []int64{2, 3} {
				if err := claim(u); err != nil {
					t.Errorf("claim of user %d after repair: %v", u, err)
				}
			}
			r.settled(t, rec)
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{repairs: 1, ok: 2})
		})
	}
}

// gateBus holds every hand-off until open is closed.
type gateBus struct {
	quan.Bus
	open chan struct{}
}

func (b gateBus) PublishMany(ctx context.Context, ms []quan.Message) error {
	<-b.open
	return b.Bus.PublishMany(ctx, ms)
}

// TestReconcileInFlightIsNotDrift: claims reserved in the cache and not
// yet in the store (held in their hand-off, then waiting on the bus with
// no consumer) differ from the store, and are neither reported nor
// "repaired"; once persisted, cache and store agree.
func TestReconcileInFlightIsNotDrift(t *testing.T) {
	for name, newRig := range reconcileRigs {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, 10)
			ctx := t.Context()
			rec := r.reconciler()
			open := make(chan struct{})
			r.s.Bus = gateBus{r.bus, open}
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.claim(t, 1)
			}()
			waitFor(t, "the claim to be reserved", func() bool {
				st, err := r.cache.State(ctx, r.tpl.ID)
				return err == nil && st.Stock == 9
			})
			// Reserved, in its hand-off: this process's work in flight
			// (and, on Redis, in the claim ledger).
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{ok: 1})
			close(open)
			<-done
			r.claim(t, 2)
			// On the bus, not persisted: no consumer runs yet.
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{ok: 2})
			st, err := r.cache.State(ctx, r.tpl.ID)
			if err != nil || st.Stock != 8 {
				t.Fatalf("cache stock %d (%v) with two claims in flight, want 8: the reconciler gave them back", st.Stock, err)
			}
			r.serve(t)
			r.settled(t, rec)
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{ok: 3})
			r.assertStock(t, 8)
		})
	}
}

// TestReconcileNeedsTwoReadings: a difference seen by one reading only,
// the other being busy, is not drift yet; the next run that reads it
// twice corrects it.
func TestReconcileNeedsTwoReadings(t *testing.T) {
	r := newClaimRig(t, 10)
	ctx := t.Context()
	rec := r.reconciler()
	r.loadCache(t)
	if ok, err := r.cache.SwapStock(ctx, r.tpl.ID, 10, 7); err != nil || !ok {
		t.Fatal(ok, err)
	}
	// Busy is checked before and after each reading: the third check,
	// before the second reading, finds work in flight.
	calls := 0
	rec.Local = []quan.InFlight{inFlightFunc(func() int64 {
		calls++
		if calls == 3 {
			return 1
		}
		return 0
	})}
	if err := rec.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	assertReconcile(t, rec, reconcileWant{ok: 1})
	r.assertCacheStock(t, 7)
	// Next run: both readings quiet and alike: repaired.
	if err := rec.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	assertReconcile(t, rec, reconcileWant{stock: 3, templates: 1, repairs: 1, ok: 2})
	r.assertStock(t, 10)
}

type inFlightFunc func() int64

func (f inFlightFunc) InFlight() int64 { return f() }

// assertCacheStock checks the cache's stock alone.
func (r *claimRig) assertCacheStock(t *testing.T, stock int64) {
	t.Helper()
	st, err := r.cache.State(t.Context(), r.tpl.ID)
	if err != nil || st.Stock != stock {
		t.Fatalf("cache stock %d (%v), want %d", st.Stock, err, stock)
	}
}
