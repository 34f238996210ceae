package quantest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/reconcile"
)

// TestReap runs the claim reaper (claims.Service.Reap) on a store and a
// cache the processes share, which keeps the claim ledger the reaper
// reads: each interleaving of a claim's reservation, hand-off and
// persisting ends with the claim decided once, the cache's stock equal to
// the store's, and a Reconciler that finds no drift. newBackends returns
// fresh backends for each subtest; their Shared cache is required.
func TestReap(t *testing.T, newBackends func(t *testing.T) ClaimBackends) {
	t.Helper()
	run := func(name string, test func(*testing.T, *reapRig)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newReapRig(t, newBackends(t), 5))
		})
	}
	run("ReservedNotPublished", testReapReservedNotPublished)
	run("PublishedNotPersisted", testReapPublishedNotPersisted)
	run("Persisted", testReapPersisted)
	run("PublishedTwice", testReapPublishedTwice)
	run("AbandonedButIssued", testReapAbandonedButIssued)
	run("RetryRefusedLimitFindsItsClaim", testReapRetryFindsItsClaim)
}

// reapRig is a claim service on a suite's backends, with a template of
// its own (one coupon per user) and a clock that later moves past the
// reaper's wait. Its consumers run once serve is called.
type reapRig struct {
	b     ClaimBackends
	s     *claims.Service
	tpl   *quan.Template
	shift atomic.Int64 // how far the clock is past claimAt
}

func newReapRig(t *testing.T, b ClaimBackends, stock int64) *reapRig {
	t.Helper()
	if b.Shared == nil {
		t.Fatal("TestReap needs a cache the processes share (ClaimBackends.Shared): the reaper reads its claim ledger")
	}
	r := &reapRig{b: b, tpl: activeTemplate(t, b.TaskStores, "reaped", stock, 1)}
	r.s = &claims.Service{Templates: b.Templates, Coupons: b.Coupons, Claims: b.Claims, Cache: b.Shared,
		Ledger: b.Shared, Reserver: b.Shared, Bus: b.Bus, MaxDeliver: 2, Backoff: []time.Duration{10 * time.Millisecond},
		Now: func() time.Time { return claimAt.Add(time.Duration(r.shift.Load())) }}
	return r
}

// later moves the clock past the reaper's wait (safe while the consumers
// read it).
func (r *reapRig) later() { r.shift.Store(int64(claims.DefaultReapAfter + time.Second)) }

func (r *reapRig) serve(t *testing.T) { ServeClaims(t, r.s) }

// load loads the template into the cache from the store.
func (r *reapRig) load(t *testing.T) {
	t.Helper()
	tpl := get(t, r.b.Templates, r.tpl.ID)
	if _, err := r.b.Shared.Load(t.Context(), quan.StateOf(tpl), r.b.Coupons.Holdings(t.Context(), tpl.ID, time.Time{})); err != nil {
		t.Fatalf("load the template into the cache: %v", err)
	}
}

// reserve reserves a coupon for user under the claim id, as a process
// does before it hands the claim off, and returns the pending claim.
func (r *reapRig) reserve(t *testing.T, user int64, key string) *quan.Claim {
	t.Helper()
	c := &quan.Claim{ID: quan.KeyedClaimID(r.tpl.ID, user, key), TemplateID: r.tpl.ID, UserID: user, Status: quan.ClaimPending, At: claimAt}
	if _, _, out, err := r.b.Shared.ReserveLimited(t.Context(), r.tpl.ID, c.ID, []int64{user}, claimAt, nil); err != nil || out[0] != "" {
		t.Fatalf("reserve for user %d: %v %v", user, out, err)
	}
	return c
}

// publish hands cs off in one message, as a process hands a batch off.
func (r *reapRig) publish(t *testing.T, cs ...*quan.Claim) {
	t.Helper()
	data, err := quan.EncodeClaims(cs)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.b.Bus.Publish(t.Context(), quan.Message{Subject: quan.ClaimBatchSubject, ID: "claims:" + cs[0].ID, Data: data}); err != nil {
		t.Fatal(err)
	}
}

func (r *reapRig) claim(t *testing.T, user int64, key string) *quan.Claim {
	t.Helper()
	c, err := r.s.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: user}, r.tpl.ID, key)
	if err != nil {
		t.Fatalf("claim of user %d: %v", user, err)
	}
	return c
}

// reap reaps and checks how many claims it gave back.
func (r *reapRig) reap(t *testing.T, want int) {
	t.Helper()
	if n, err := r.s.Reap(t.Context()); err != nil || n != want {
		t.Fatalf("Reap = %d, %v; want %d", n, err, want)
	}
}

// waitFor polls until cond holds, failing the test after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s, still waiting for %s", what)
		}
	}
}

func (r *reapRig) waitIssued(t *testing.T, id string) {
	t.Helper()
	waitFor(t, "claim "+id+" issued", func() bool {
		rec, err := r.b.Claims.Claim(t.Context(), id)
		return err == nil && rec.Status == quan.ClaimIssued
	})
}

// assertStock checks that the cache and the store both hold stock.
func (r *reapRig) assertStock(t *testing.T, stock int64) {
	t.Helper()
	st, err := r.b.Shared.State(t.Context(), r.tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if left := get(t, r.b.Templates, r.tpl.ID).Stock; st.Stock != stock || left != stock {
		t.Errorf("stock %d in the cache, %d in the store; want %d", st.Stock, left, stock)
	}
}

// assertReconciled waits until no claim of the template is in flight (in
// the ledger, on the bus), then checks that a Reconciler reads the
// template and finds the cache and the store agree: no drift, no repair.
func (r *reapRig) assertReconciled(t *testing.T) {
	t.Helper()
	rec := &reconcile.Reconciler{Templates: r.b.Templates, Tasks: r.b.Tasks, Coupons: r.b.Coupons, Cache: r.b.Shared,
		Ledger: r.b.Shared, Buses: []quan.Bus{r.b.Bus}, Local: []reconcile.InFlight{r.s}, Settle: -1}
	waitFor(t, "the claims in flight to settle", func() bool {
		busy, err := rec.Busy(t.Context(), r.tpl.ID)
		return err == nil && !busy
	})
	if err := rec.Reconcile(t.Context()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	c := &rec.Counters
	if c.RunsOK.Load() != 1 || c.StockDrift.Load() != 0 || c.DriftTemplates.Load() != 0 || c.HeldDriftUsers.Load() != 0 || c.Repairs.Load() != 0 {
		t.Errorf("the reconciler found drift: %d runs, stock drift %d, %d templates, %d users, %d repairs",
			c.RunsOK.Load(), c.StockDrift.Load(), c.DriftTemplates.Load(), c.HeldDriftUsers.Load(), c.Repairs.Load())
	}
	// Nothing in flight either side of the reading: it compared them.
	if busy, err := rec.Busy(t.Context(), r.tpl.ID); err != nil || busy {
		t.Errorf("the template was busy (%v) as it was reconciled", err)
	}
}

// testReapReservedNotPublished: the process died between the reservation
// and the hand-off. The reaper records the claim failed (abandoned) and
// gives its reservation back; its hand-off reaching the bus late issues
// nothing.
func testReapReservedNotPublished(t *testing.T, r *reapRig) {
	r.load(t)
	c := r.reserve(t, 7, "k")
	r.reap(t, 0) // before the wait
	r.later()
	r.reap(t, 1)
	rec, err := r.b.Claims.Claim(t.Context(), c.ID)
	if err != nil || rec.Status != quan.ClaimFailed || rec.Reason != quan.ReasonAbandoned {
		t.Fatalf("the store's record: %+v %v; want failed, %s", rec, err, quan.ReasonAbandoned)
	}
	r.assertStock(t, 5)
	if held, err := r.b.Shared.Held(t.Context(), r.tpl.ID, 7); err != nil || held != 0 {
		t.Errorf("user 7 still holds %d in the cache (%v)", held, err)
	}
	if r.s.Counters.Reaped.Load() != 1 {
		t.Errorf("%d reaped, want 1", r.s.Counters.Reaped.Load())
	}
	r.assertReconciled(t)

	// Its hand-off reaching the bus late issues nothing: the store
	// returns the failed record, which is settled (a give-back of
	// nothing).
	r.serve(t)
	r.publish(t, c)
	waitFor(t, "the late hand-off settled", func() bool { return r.s.Counters.Failed.Load() == 1 })
	if rec, err := r.b.Claims.Claim(t.Context(), c.ID); err != nil || rec.Status != quan.ClaimFailed {
		t.Fatalf("a reaped claim delivered late: %+v %v", rec, err)
	}
	r.assertStock(t, 5)
	r.assertReconciled(t)
}

// testReapPublishedNotPersisted: on the bus, waiting for a consumer, the
// claim is never reaped.
func testReapPublishedNotPersisted(t *testing.T, r *reapRig) {
	c := r.claim(t, 7, "k")
	if c.Status != quan.ClaimPending {
		t.Fatalf("claim: %+v", c)
	}
	r.later()
	r.reap(t, 0)
	r.serve(t)
	r.waitIssued(t, c.ID)
	r.assertStock(t, 4)
	r.assertReconciled(t)
}

func testReapPersisted(t *testing.T, r *reapRig) {
	r.serve(t)
	c := r.claim(t, 7, "")
	r.waitIssued(t, c.ID)
	r.later()
	r.reap(t, 0)
	r.assertStock(t, 4)
	r.assertReconciled(t)
}

// testReapPublishedTwice: a retry with the same key hands the claim off
// again: one coupon, and the retry answers the first try's claim.
func testReapPublishedTwice(t *testing.T, r *reapRig) {
	first := r.claim(t, 7, "k")
	if again := r.claim(t, 7, "k"); again.ID != first.ID || again.Status != quan.ClaimPending {
		t.Fatalf("retry before persisting: %+v, want pending %s", again, first.ID)
	}
	r.serve(t)
	r.waitIssued(t, first.ID)
	if again := r.claim(t, 7, "k"); again.ID != first.ID || again.Status != quan.ClaimIssued || again.CouponID == 0 {
		t.Fatalf("retry after persisting: %+v, want issued %s", again, first.ID)
	}
	r.later()
	r.reap(t, 0)
	r.assertStock(t, 4)
	if st := stats(t, r.b.TaskStores, r.tpl.ID, 0); st.Coupons != 1 || st.MaxPerUser != 1 {
		t.Errorf("coupons %+v, want one", st)
	}
	r.assertReconciled(t)
}

// testReapAbandonedButIssued: the hand-off timed out for its process,
// yet reached the bus and was issued: the reaper keeps the reservation.
func testReapAbandonedButIssued(t *testing.T, r *reapRig) {
	r.load(t)
	r.serve(t)
	c := r.reserve(t, 7, "k")
	r.publish(t, c)
	r.waitIssued(t, c.ID)
	r.later()
	if _, err := r.s.Reap(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r.s.Counters.Reaped.Load() != 0 {
		t.Fatalf("a reservation the store issued was given back")
	}
	r.assertStock(t, 4)
	r.assertReconciled(t)
}

// testReapRetryFindsItsClaim: the cache was primed again after the claim
// issued: its record is gone, the user holds the limit, and the retry
// finds the claim in the store.
func testReapRetryFindsItsClaim(t *testing.T, r *reapRig) {
	r.serve(t)
	first := r.claim(t, 7, "k")
	r.waitIssued(t, first.ID)
	tpl := get(t, r.b.Templates, r.tpl.ID)
	if err := r.b.Shared.Prime(t.Context(), quan.StateOf(tpl), r.b.Coupons.Holdings(t.Context(), tpl.ID, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if again := r.claim(t, 7, "k"); again.ID != first.ID || again.Status != quan.ClaimIssued {
		t.Fatalf("retry: %+v, want issued %s", again, first.ID)
	}
	if _, err := r.s.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: 7}, r.tpl.ID, "other"); quan.ErrorCode(err) != quan.ELIMIT {
		t.Fatalf("another claim of the user: %v, want limit_reached", err)
	}
	r.assertStock(t, 4)
	r.assertReconciled(t)
}
