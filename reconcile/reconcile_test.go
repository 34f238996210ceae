package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/reconcile"
)

// reconcileRigs are the claim rigs Reconciler is tested on: the
// in-process cache, and Redis with its claim ledger (skipped without
// QUAN_TEST_REDIS; CI sets it).
var reconcileRigs = map[string]func(t *testing.T, stock int64) *testrig.ClaimRig{
	"InProcess": testrig.NewClaimRig,
	"Redis": func(t *testing.T, stock int64) *testrig.ClaimRig {
		r, _, _ := testrig.NewLedgerRig(t, stock)
		return r
	},
}

// reconciler returns a Reconciler of the rig's cache, store and bus, with
// no wait between its readings.
func reconciler(r *testrig.ClaimRig) *reconcile.Reconciler {
	return &reconcile.Reconciler{Templates: r.Store, Tasks: r.Store, Coupons: r.Store, Cache: r.Cache, Ledger: r.S.Ledger,
		Buses: []quan.Bus{r.Bus}, Local: []reconcile.InFlight{r.S}, Settle: -1}
}

// claim claims a coupon for each user through the service.
func claim(r *testrig.ClaimRig, t *testing.T, users ...int64) {
	t.Helper()
	for _, u := range users {
		if _, err := r.S.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: u}, r.Tpl.ID, ""); err != nil {
			t.Fatalf("claim for user %d: %v", u, err)
		}
	}
}

// settled waits until nothing is in flight for the rig's template.
func settled(r *testrig.ClaimRig, t *testing.T, rec *reconcile.Reconciler) {
	t.Helper()
	testrig.WaitFor(t, "the claims in flight to settle", func() bool {
		busy, err := rec.Busy(t.Context(), r.Tpl.ID)
		return err == nil && !busy
	})
}

type reconcileWant struct {
	stock, templates, users, repairs, ok int64
}

func assertReconcile(t *testing.T, rec *reconcile.Reconciler, want reconcileWant) {
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
			r.Serve(t)
			rec := reconciler(r)
			claim(r, t, 1, 2)
			settled(r, t, rec)
			r.AssertStock(t, 8)

			ctx := t.Context()
			if ok, err := r.Cache.SwapStock(ctx, r.Tpl.ID, 8, 5); err != nil || !ok {
				t.Fatalf("inject stock drift: %v %v", ok, err)
			}
			if n, err := r.Cache.SwapHeld(ctx, r.Tpl.ID, []quan.HeldSwap{{UserID: 1, Old: 1, Count: 0}, {UserID: 99, Old: 0, Count: 1}}); err != nil || n != 2 {
				t.Fatalf("inject holding drift: %d %v", n, err)
			}
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{stock: 3, templates: 1, users: 2, repairs: 1, ok: 1})
			r.AssertStock(t, 8)
			for u, want := range map[int64]int64{1: 1, 2: 1, 99: 0} {
				if n, err := r.Cache.Held(ctx, r.Tpl.ID, u); err != nil || n != want {
					t.Errorf("user %d holds %d in the cache (%v), want %d", u, n, err, want)
				}
			}
			// User 1 is at the limit again: the repaired cache refuses.
			if _, err := r.S.Claim(ctx, quan.Identity{Role: quan.RoleUser, UserID: 1}, r.Tpl.ID, ""); quan.ErrorCode(err) != quan.ELIMIT {
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
			tpl, err := r.Store.UpdateTemplate(ctx, 1, r.Tpl.ID, "test", "limits", func(t *quan.Template) error {
				t.PerUserLimit, t.PerUserDaily, t.PerUserWeekly = 5, 1, 2
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			r.Tpl = tpl
			r.Serve(t)
			rec := reconciler(r)
			rec.Now = func() time.Time { return testrig.ClaimAt }
			claim(r, t, 1)
			settled(r, t, rec)
			day, week := quan.PeriodsOf(testrig.ClaimAt)

			if n, err := r.Cache.SwapPeriodHeld(ctx, tpl.ID, day, []quan.HeldSwap{{UserID: 1, Old: 1, Count: 0}, {UserID: 2, Old: 0, Count: 1}}); err != nil || n != 2 {
				t.Fatalf("inject day drift: %d %v", n, err)
			}
			if n, err := r.Cache.SwapPeriodHeld(ctx, tpl.ID, week, []quan.HeldSwap{{UserID: 3, Old: 0, Count: 2}}); err != nil || n != 1 {
				t.Fatalf("inject week drift: %d %v", n, err)
			}
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{templates: 1, users: 3, repairs: 1, ok: 1})
			for _, p := range []quan.Period{day, week} {
				got := map[int64]int64{}
				for h, err := range r.Cache.PeriodHoldings(ctx, tpl.ID, p) {
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
				_, err := r.S.Claim(ctx, quan.Identity{Role: quan.RoleUser, UserID: user}, tpl.ID, "")
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
			settled(r, t, rec)
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
			rec := reconciler(r)
			open := make(chan struct{})
			r.S.Bus = gateBus{r.Bus, open}
			done := make(chan struct{})
			go func() {
				defer close(done)
				claim(r, t, 1)
			}()
			testrig.WaitFor(t, "the claim to be reserved", func() bool {
				st, err := r.Cache.State(ctx, r.Tpl.ID)
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
			claim(r, t, 2)
			// On the bus, not persisted: no consumer runs yet.
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{ok: 2})
			st, err := r.Cache.State(ctx, r.Tpl.ID)
			if err != nil || st.Stock != 8 {
				t.Fatalf("cache stock %d (%v) with two claims in flight, want 8: the reconciler gave them back", st.Stock, err)
			}
			r.Serve(t)
			settled(r, t, rec)
			if err := rec.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			assertReconcile(t, rec, reconcileWant{ok: 3})
			r.AssertStock(t, 8)
		})
	}
}

// TestReconcileNeedsTwoReadings: a difference seen by one reading only,
// the other being busy, is not drift yet; the next run that reads it
// twice corrects it.
func TestReconcileNeedsTwoReadings(t *testing.T) {
	r := testrig.NewClaimRig(t, 10)
	ctx := t.Context()
	rec := reconciler(r)
	r.LoadCache(t)
	if ok, err := r.Cache.SwapStock(ctx, r.Tpl.ID, 10, 7); err != nil || !ok {
		t.Fatal(ok, err)
	}
	// Busy is checked before and after each reading: the third check,
	// before the second reading, finds work in flight.
	calls := 0
	rec.Local = []reconcile.InFlight{inFlightFunc(func() int64 {
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
	assertCacheStock(r, t, 7)
	// Next run: both readings quiet and alike: repaired.
	if err := rec.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	assertReconcile(t, rec, reconcileWant{stock: 3, templates: 1, repairs: 1, ok: 2})
	r.AssertStock(t, 10)
}

type inFlightFunc func() int64

func (f inFlightFunc) InFlight() int64 { return f() }

// assertCacheStock checks the cache's stock alone.
func assertCacheStock(r *testrig.ClaimRig, t *testing.T, stock int64) {
	t.Helper()
	st, err := r.Cache.State(t.Context(), r.Tpl.ID)
	if err != nil || st.Stock != stock {
		t.Fatalf("cache stock %d (%v), want %d", st.Stock, err, stock)
	}
}
