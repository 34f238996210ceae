package claims_test

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig"
)

// TestReap covers the reaper's decision on each interleaving of a claim's
// reservation, hand-off and persisting.
func TestReap(t *testing.T) {
	user := func(id int64) quan.Identity { return quan.Identity{Role: quan.RoleUser, UserID: id} }

	t.Run("ReservedNotPublished", func(t *testing.T) {
		// The process died between the reservation and the hand-off.
		r, c, later := testrig.NewLedgerRig(t, 5)
		r.LoadCache(t)
		id := quan.KeyedClaimID(r.Tpl.ID, 7, "k")
		if _, _, out, err := c.ReserveLimited(t.Context(), r.Tpl.ID, id, []int64{7}, testrig.ClaimAt, nil); err != nil || out[0] != "" {
			t.Fatalf("reserve: %v %v", out, err)
		}
		if n, err := r.S.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap before the wait: %d %v", n, err)
		}
		later()
		if n, err := r.S.Reap(t.Context()); err != nil || n != 1 {
			t.Fatalf("reap: %d %v, want 1", n, err)
		}
		rec, err := r.Store.Claim(t.Context(), id)
		if err != nil || rec.Status != quan.ClaimFailed || rec.Reason != quan.ReasonAbandoned {
			t.Fatalf("the store's record: %+v %v", rec, err)
		}
		r.AssertStock(t, 5)
		if held, _ := c.Held(t.Context(), r.Tpl.ID, 7); held != 0 {
			t.Errorf("user 7 still holds %d in the cache", held)
		}
		// Its hand-off reaching the bus late issues nothing.
		r.Serve(t)
		r.PublishBatch(t, []*quan.Claim{{ID: id, TemplateID: r.Tpl.ID, UserID: 7, Status: quan.ClaimPending, At: testrig.ClaimAt}})
		time.Sleep(200 * time.Millisecond)
		if rec, _ := r.Store.Claim(t.Context(), id); rec.Status != quan.ClaimFailed {
			t.Fatalf("a reaped claim delivered late: %+v", rec)
		}
		r.AssertStock(t, 5)
	})

	t.Run("PublishedNotPersisted", func(t *testing.T) {
		// On the bus, waiting for a consumer: never reaped.
		r, _, later := testrig.NewLedgerRig(t, 5)
		c, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k")
		if err != nil || c.Status != quan.ClaimPending {
			t.Fatalf("claim: %+v %v", c, err)
		}
		later()
		if n, err := r.S.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap: %d %v, want 0", n, err)
		}
		r.Serve(t)
		testrig.WaitFor(t, "the claim issued", func() bool {
			rec, err := r.Store.Claim(t.Context(), c.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		r.AssertStock(t, 4)
	})

	t.Run("Persisted", func(t *testing.T) {
		r, _, later := testrig.NewLedgerRig(t, 5)
		r.Serve(t)
		c, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		testrig.WaitFor(t, "the claim issued", func() bool {
			rec, err := r.Store.Claim(t.Context(), c.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		later()
		if n, err := r.S.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap: %d %v, want 0", n, err)
		}
		r.AssertStock(t, 4)
	})

	t.Run("PublishedTwice", func(t *testing.T) {
		// A retry with the same key hands the claim off again: one
		// coupon, and the retry answers the first try's claim.
		r, _, later := testrig.NewLedgerRig(t, 5)
		first, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k")
		if err != nil {
			t.Fatal(err)
		}
		again, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k")
		if err != nil || again.ID != first.ID || again.Status != quan.ClaimPending {
			t.Fatalf("retry before persisting: %+v %v, want pending %s", again, err, first.ID)
		}
		r.Serve(t)
		testrig.WaitFor(t, "the claim issued", func() bool {
			rec, err := r.Store.Claim(t.Context(), first.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		again, err = r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k")
		if err != nil || again.ID != first.ID || again.Status != quan.ClaimIssued || again.CouponID == 0 {
			t.Fatalf("retry after persisting: %+v %v, want issued %s", again, err, first.ID)
		}
		later()
		if n, err := r.S.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap: %d %v, want 0", n, err)
		}
		r.AssertStock(t, 4)
		if st, err := r.Store.CouponStats(t.Context(), r.Tpl.ID, 0); err != nil || st.Coupons != 1 || st.MaxPerUser != 1 {
			t.Errorf("coupons %+v %v, want one", st, err)
		}
	})

	t.Run("AbandonedButIssued", func(t *testing.T) {
		// The hand-off timed out for its process, yet reached the bus and
		// was issued: the reaper keeps the reservation.
		r, c, later := testrig.NewLedgerRig(t, 5)
		r.LoadCache(t)
		r.Serve(t)
		id := quan.KeyedClaimID(r.Tpl.ID, 7, "k")
		if _, _, out, err := c.ReserveLimited(t.Context(), r.Tpl.ID, id, []int64{7}, testrig.ClaimAt, nil); err != nil || out[0] != "" {
			t.Fatalf("reserve: %v %v", out, err)
		}
		r.PublishBatch(t, []*quan.Claim{{ID: id, TemplateID: r.Tpl.ID, UserID: 7, Status: quan.ClaimPending, At: testrig.ClaimAt}})
		testrig.WaitFor(t, "the claim issued", func() bool {
			rec, err := r.Store.Claim(t.Context(), id)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		later()
		if _, err := r.S.Reap(t.Context()); err != nil {
			t.Fatal(err)
		}
		if r.S.Counters.Reaped.Load() != 0 {
			t.Fatalf("a reservation the store issued was given back")
		}
		r.AssertStock(t, 4)
	})

	t.Run("RetryRefusedLimitFindsItsClaim", func(t *testing.T) {
		// The cache was reloaded after the claim issued: its record is
		// gone, the user holds the limit, and the retry finds the claim.
		r, _, _ := testrig.NewLedgerRig(t, 5)
		r.Serve(t)
		first, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k")
		if err != nil {
			t.Fatal(err)
		}
		testrig.WaitFor(t, "the claim issued", func() bool {
			rec, err := r.Store.Claim(t.Context(), first.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		tpl, err := r.Store.Template(t.Context(), quan.AnyShop, r.Tpl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Cache.Prime(t.Context(), quan.StateOf(tpl), r.Store.Holdings(t.Context(), r.Tpl.ID, time.Time{})); err != nil {
			t.Fatal(err)
		}
		again, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k")
		if err != nil || again.ID != first.ID || again.Status != quan.ClaimIssued {
			t.Fatalf("retry: %+v %v", again, err)
		}
		if _, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "other"); quan.ErrorCode(err) != quan.ELIMIT {
			t.Fatalf("another claim of the user: %v, want limit_reached", err)
		}
	})
}
