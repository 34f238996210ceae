package quan_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/redis"
)

// newLedgerRig is newClaimRig on a Redis cache, which keeps a claim
// ledger, and a clock that later moves past the reaper's wait (safe while
// the rig's consumers read it). It skips without QUAN_TEST_REDIS (CI sets
// it).
func newLedgerRig(t *testing.T, stock int64) (r *claimRig, c *redis.Cache, later func()) {
	t.Helper()
	url := os.Getenv("QUAN_TEST_REDIS")
	if url == "" {
		t.Skip("set QUAN_TEST_REDIS=redis://127.0.0.1:6379 to test the claim reaper")
	}
	var b [6]byte
	rand.Read(b[:])
	c, err := redis.Open(t.Context(), url, "quantest:"+hex.EncodeToString(b[:])+":")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Drop(t.Context())
		c.Close()
	})
	r = newClaimRig(t, stock)
	r.cache, r.s.Cache, r.s.Ledger, r.s.Reserver = c, c, c, c
	var shift atomic.Int64
	r.s.Now = func() time.Time { return claimAt.Add(time.Duration(shift.Load())) }
	return r, c, func() { shift.Store(int64(quan.DefaultReapAfter + time.Second)) }
}

// TestReap covers the reaper's decision on each interleaving of a claim's
// reservation, hand-off and persisting.
func TestReap(t *testing.T) {
	user := func(id int64) quan.Identity { return quan.Identity{Role: quan.RoleUser, UserID: id} }

	t.Run("ReservedNotPublished", func(t *testing.T) {
		// The process died between the reservation and the hand-off.
		r, c, later := newLedgerRig(t, 5)
		r.loadCache(t)
		id := quan.KeyedClaimID(r.tpl.ID, 7, "k")
		if _, _, out, err := c.ReserveLimited(t.Context(), r.tpl.ID, id, []int64{7}, claimAt, nil); err != nil || out[0] != "" {
			t.Fatalf("reserve: %v %v", out, err)
		}
		if n, err := r.s.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap before the wait: %d %v", n, err)
		}
		later()
		if n, err := r.s.Reap(t.Context()); err != nil || n != 1 {
			t.Fatalf("reap: %d %v, want 1", n, err)
		}
		rec, err := r.store.Claim(t.Context(), id)
		if err != nil || rec.Status != quan.ClaimFailed || rec.Reason != quan.ReasonAbandoned {
			t.Fatalf("the store's record: %+v %v", rec, err)
		}
		r.assertStock(t, 5)
		if held, _ := c.Held(t.Context(), r.tpl.ID, 7); held != 0 {
			t.Errorf("user 7 still holds %d in the cache", held)
		}
		// Its hand-off reaching the bus late issues nothing.
		r.serve(t)
		r.publishBatch(t, []*quan.Claim{{ID: id, TemplateID: r.tpl.ID, UserID: 7, Status: quan.ClaimPending, At: claimAt}})
		time.Sleep(200 * time.Millisecond)
		if rec, _ := r.store.Claim(t.Context(), id); rec.Status != quan.ClaimFailed {
			t.Fatalf("a reaped claim delivered late: %+v", rec)
		}
		r.assertStock(t, 5)
	})

	t.Run("PublishedNotPersisted", func(t *testing.T) {
		// On the bus, waiting for a consumer: never reaped.
		r, _, later := newLedgerRig(t, 5)
		c, err := r.s.Claim(t.Context(), user(7), r.tpl.ID, "k")
		if err != nil || c.Status != quan.ClaimPending {
			t.Fatalf("claim: %+v %v", c, err)
		}
		later()
		if n, err := r.s.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap: %d %v, want 0", n, err)
		}
		r.serve(t)
		waitFor(t, "the claim issued", func() bool {
			rec, err := r.store.Claim(t.Context(), c.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		r.assertStock(t, 4)
	})

	t.Run("Persisted", func(t *testing.T) {
		r, _, later := newLedgerRig(t, 5)
		r.serve(t)
		c, err := r.s.Claim(t.Context(), user(7), r.tpl.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the claim issued", func() bool {
			rec, err := r.store.Claim(t.Context(), c.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		later()
		if n, err := r.s.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap: %d %v, want 0", n, err)
		}
		r.assertStock(t, 4)
	})

	t.Run("PublishedTwice", func(t *testing.T) {
		// A retry with the same key hands the claim off again: one
		// coupon, and the retry answers the first try's claim.
		r, _, later := newLedgerRig(t, 5)
		first, err := r.s.Claim(t.Context(), user(7), r.tpl.ID, "k")
		if err != nil {
			t.Fatal(err)
		}
		again, err := r.s.Claim(t.Context(), user(7), r.tpl.ID, "k")
		if err != nil || again.ID != first.ID || again.Status != quan.ClaimPending {
			t.Fatalf("retry before persisting: %+v %v, want pending %s", again, err, first.ID)
		}
		r.serve(t)
		waitFor(t, "the claim issued", func() bool {
			rec, err := r.store.Claim(t.Context(), first.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		again, err = r.s.Claim(t.Context(), user(7), r.tpl.ID, "k")
		if err != nil || again.ID != first.ID || again.Status != quan.ClaimIssued || again.CouponID == 0 {
			t.Fatalf("retry after persisting: %+v %v, want issued %s", again, err, first.ID)
		}
		later()
		if n, err := r.s.Reap(t.Context()); err != nil || n != 0 {
			t.Fatalf("reap: %d %v, want 0", n, err)
		}
		r.assertStock(t, 4)
		if st, err := r.store.CouponStats(t.Context(), r.tpl.ID, 0); err != nil || st.Coupons != 1 || st.MaxPerUser != 1 {
			t.Errorf("coupons %+v %v, want one", st, err)
		}
	})

	t.Run("AbandonedButIssued", func(t *testing.T) {
		// The hand-off timed out for its process, yet reached the bus and
		// was issued: the reaper keeps the reservation.
		r, c, later := newLedgerRig(t, 5)
		r.loadCache(t)
		r.serve(t)
		id := quan.KeyedClaimID(r.tpl.ID, 7, "k")
		if _, _, out, err := c.ReserveLimited(t.Context(), r.tpl.ID, id, []int64{7}, claimAt, nil); err != nil || out[0] != "" {
			t.Fatalf("reserve: %v %v", out, err)
		}
		r.publishBatch(t, []*quan.Claim{{ID: id, TemplateID: r.tpl.ID, UserID: 7, Status: quan.ClaimPending, At: claimAt}})
		waitFor(t, "the claim issued", func() bool {
			rec, err := r.store.Claim(t.Context(), id)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		later()
		if _, err := r.s.Reap(t.Context()); err != nil {
			t.Fatal(err)
		}
		if r.s.Counters.Reaped.Load() != 0 {
			t.Fatalf("a reservation the store issued was given back")
		}
		r.assertStock(t, 4)
	})

	t.Run("RetryRefusedLimitFindsItsClaim", func(t *testing.T) {
		// The cache was reloaded after the claim issued: its record is
		// gone, the user holds the limit, and the retry finds the claim.
		r, _, _ := newLedgerRig(t, 5)
		r.serve(t)
		first, err := r.s.Claim(t.Context(), user(7), r.tpl.ID, "k")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the claim issued", func() bool {
			rec, err := r.store.Claim(t.Context(), first.ID)
			return err == nil && rec.Status == quan.ClaimIssued
		})
		tpl, err := r.store.Template(t.Context(), quan.AnyShop, r.tpl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.cache.Prime(t.Context(), quan.StateOf(tpl), r.store.Holdings(t.Context(), r.tpl.ID, time.Time{})); err != nil {
			t.Fatal(err)
		}
		again, err := r.s.Claim(t.Context(), user(7), r.tpl.ID, "k")
		if err != nil || again.ID != first.ID || again.Status != quan.ClaimIssued {
			t.Fatalf("retry: %+v %v", again, err)
		}
		if _, err := r.s.Claim(t.Context(), user(7), r.tpl.ID, "other"); quan.ErrorCode(err) != quan.ELIMIT {
			t.Fatalf("another claim of the user: %v, want limit_reached", err)
		}
	})
}

// loadCache loads the rig's template into its cache.
func (r *claimRig) loadCache(t *testing.T) {
	t.Helper()
	tpl, err := r.store.Template(t.Context(), quan.AnyShop, r.tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cache.Load(t.Context(), quan.StateOf(tpl), r.store.Holdings(t.Context(), r.tpl.ID, time.Time{})); err != nil && !errors.Is(err, quan.ErrCacheCold) {
		t.Fatal(err)
	}
}
