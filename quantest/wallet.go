package quantest

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// WalletStores are the ports of one store that the wallet uses.
type WalletStores struct {
	ClaimStores
	Wallet quan.WalletStore
}

// TestWalletStore runs the conformance suite of quan.WalletStore.
func TestWalletStore(t *testing.T, newStores func(t *testing.T) WalletStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, WalletStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("UpdateCoupons/SavesWhatChanged", testUpdateCoupons)
	run("UpdateCoupons/OnlyTheUsersCoupons", testUpdateCouponsOwner)
	run("UpdateCoupons/DoubleLockOneWins", testDoubleLock)
	run("OrderCoupons", testOrderCoupons)
	run("SwapCoupons/WritesWhenUnchanged", testSwapCoupons)
	run("SwapCoupons/AllOrNothing", testSwapAllOrNothing)
	run("SwapCoupons/OnlyTheUsersCoupons", testSwapOwner)
	run("SwapCoupons/DoubleLockOneWins", testDoubleSwap)
	run("LapseCoupons/ExpiresAndReleases", testLapseCoupons)
	run("LockKey/KeptWithTheLock", testLockKey)
	run("Budget/ReservedSpentGivenBack", testBudgetMoves)
	run("Budget/Stampede", testBudgetStampede)
}

// walletCoupons gives users one coupon each of a fresh template and returns them.
func walletCoupons(t *testing.T, s WalletStores, users ...int64) []*quan.Coupon {
	t.Helper()
	tpl := activeTemplate(t, s.TaskStores, "wallet", 100, 1)
	var out []*quan.Coupon
	for _, u := range users {
		c := issueClaims(t, s.ClaimStores, newClaim(tpl.ID, u))[0]
		cs := coupons(t, s.TaskStores, u, tpl.ID)
		if c.Status != quan.ClaimIssued || len(cs) != 1 {
			t.Fatalf("issue a coupon to user %d: %+v", u, c)
		}
		out = append(out, cs[0])
	}
	return out
}

var walletNow = claimAt.Add(time.Hour) // inside the coupons' window

func testUpdateCoupons(t *testing.T, s WalletStores) {
	cs := walletCoupons(t, s, 1)
	c := cs[0]
	until := walletNow.Add(15 * time.Minute)
	got, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID, c.ID}, func(cs []*quan.Coupon) error {
		if len(cs) != 1 {
			t.Errorf("fn got %d coupons for one id named twice", len(cs))
		}
		if cs[0].Code != c.Code {
			t.Errorf("fn got coupon %d with code %q, want %q", c.ID, cs[0].Code, c.Code)
		}
		return cs[0].Lock("order-1", walletNow, until)
	})
	if err != nil || len(got) != 1 || got[0].Status != quan.CouponLocked || got[0].Code != c.Code {
		t.Fatalf("UpdateCoupons = %+v, %v", got, err)
	}
	back := coupons(t, s.TaskStores, 1, c.TemplateID)[0]
	if back.Status != quan.CouponLocked || back.OrderID != "order-1" || !back.LockedUntil.Equal(until) || !back.UpdatedAt.Equal(walletNow) || back.Code != c.Code {
		t.Fatalf("read back %+v, want locked by order-1 until %s", back, until)
	}
	// A failing fn writes nothing.
	boom := errors.New("boom")
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(cs []*quan.Coupon) error {
		cs[0].Release(walletNow)
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("a failing fn: %v", err)
	}
	if back := coupons(t, s.TaskStores, 1, c.TemplateID)[0]; back.Status != quan.CouponLocked {
		t.Fatalf("a failing fn wrote %s", back.Status)
	}
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(cs []*quan.Coupon) error {
		return cs[0].Redeem(walletNow)
	}); err != nil {
		t.Fatal(err)
	}
	back = coupons(t, s.TaskStores, 1, c.TemplateID)[0]
	if back.Status != quan.CouponUsed || back.OrderID != "order-1" {
		t.Fatalf("after redeem %+v", back)
	}
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(cs []*quan.Coupon) error {
		return cs[0].Refund(walletNow)
	}); err != nil {
		t.Fatal(err)
	}
	back = coupons(t, s.TaskStores, 1, c.TemplateID)[0]
	if back.Status != quan.CouponAvailable || back.OrderID != "" || !back.LockedUntil.IsZero() {
		t.Fatalf("after refund %+v, want available and free", back)
	}
}

func testUpdateCouponsOwner(t *testing.T, s WalletStores) {
	cs := walletCoupons(t, s, 1, 2)
	called := false
	_, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{cs[0].ID, cs[1].ID}, func([]*quan.Coupon) error {
		called = true
		return nil
	})
	if !errors.Is(err, quan.ErrNotFound) || called {
		t.Fatalf("user 1 updating user 2's coupon: %v (fn called %v), want ErrNotFound", err, called)
	}
}

// testDoubleLock has 20 orders lock one coupon at once: exactly one wins.
func testDoubleLock(t *testing.T, s WalletStores) {
	c := walletCoupons(t, s, 1)[0]
	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(cs []*quan.Coupon) error {
				return cs[0].Lock(string(rune('a'+i)), walletNow, walletNow.Add(time.Minute))
			})
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, quan.ErrTransition):
				t.Errorf("lock: %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of 20 concurrent locks won, want 1", won.Load())
	}
}

func testOrderCoupons(t *testing.T, s WalletStores) {
	a := walletCoupons(t, s, 1, 2)
	b := walletCoupons(t, s, 1)[0]
	c := walletCoupons(t, s, 1)[0]
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{b.ID}, func(cs []*quan.Coupon) error {
		return cs[0].Lock("order-1", walletNow, walletNow.Add(time.Minute))
	}); err != nil {
		t.Fatal(err)
	}
	ids := func(cs []*quan.Coupon) []int64 {
		out := []int64{}
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		order string
		ids   []int64
		want  []int64
	}{
		{"what the order holds", "order-1", nil, []int64{b.ID}},
		{"and the coupons named, in id order", "order-1", []int64{c.ID, a[0].ID}, []int64{a[0].ID, b.ID, c.ID}},
		{"another user's coupon left out", "order-2", []int64{a[1].ID, c.ID}, []int64{c.ID}},
		{"nothing", "order-2", nil, []int64{}},
	} {
		got, err := s.Wallet.OrderCoupons(t.Context(), 1, tc.order, tc.ids)
		if err != nil || !slices.Equal(ids(got), tc.want) {
			t.Errorf("%s: OrderCoupons(1, %s, %v) = %v, %v; want %v", tc.name, tc.order, tc.ids, ids(got), err, tc.want)
		}
	}
	got, err := s.Wallet.OrderCoupons(t.Context(), 1, "order-1", nil)
	if err != nil || len(got) != 1 || got[0].Status != quan.CouponLocked || got[0].OrderID != "order-1" || got[0].Code != b.Code {
		t.Fatalf("OrderCoupons read %+v, %v; want the whole locked coupon, code %s", got, err, b.Code)
	}
}

// locked returns a copy of c locked for order at walletNow.
func locked(t *testing.T, c *quan.Coupon, order string) *quan.Coupon {
	t.Helper()
	cp := *c
	if err := cp.Lock(order, walletNow, walletNow.Add(15*time.Minute)); err != nil {
		t.Fatal(err)
	}
	return &cp
}

func testSwapCoupons(t *testing.T, s WalletStores) {
	c := walletCoupons(t, s, 1)[0]
	after := locked(t, c, "order-1")
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{c}, []*quan.Coupon{after}); !ok || err != nil {
		t.Fatalf("swap an unchanged coupon = %v, %v; want true", ok, err)
	}
	back := coupons(t, s.TaskStores, 1, c.TemplateID)[0]
	if back.Status != quan.CouponLocked || back.OrderID != "order-1" || !back.LockedUntil.Equal(after.LockedUntil) || !back.UpdatedAt.Equal(walletNow) {
		t.Fatalf("read back %+v, want locked by order-1 until %s", back, after.LockedUntil)
	}
	// The coupon as first read is stale now: another order's swap from it
	// writes nothing.
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{c}, []*quan.Coupon{locked(t, c, "order-2")}); ok || err != nil {
		t.Fatalf("swap from a stale read = %v, %v; want false", ok, err)
	}
	if back := coupons(t, s.TaskStores, 1, c.TemplateID)[0]; back.OrderID != "order-1" {
		t.Fatalf("a stale swap wrote: %+v", back)
	}
	// From what it reads now, the next change goes through: paid.
	paid := *back
	if err := paid.Redeem(walletNow.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{back}, []*quan.Coupon{&paid}); !ok || err != nil {
		t.Fatalf("swap to used = %v, %v", ok, err)
	}
	if back := coupons(t, s.TaskStores, 1, c.TemplateID)[0]; back.Status != quan.CouponUsed || back.OrderID != "order-1" {
		t.Fatalf("after the swap to used: %+v", back)
	}
}

// testSwapAllOrNothing swaps two coupons of which one changed since the
// read: neither is written.
func testSwapAllOrNothing(t *testing.T, s WalletStores) {
	a := walletCoupons(t, s, 1)[0]
	b := walletCoupons(t, s, 1)[0]
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{b.ID}, func(cs []*quan.Coupon) error {
		return cs[0].Lock("other", walletNow, walletNow.Add(time.Minute))
	}); err != nil {
		t.Fatal(err)
	}
	before := []*quan.Coupon{a, b}
	if a.ID > b.ID {
		before = []*quan.Coupon{b, a}
	}
	after := []*quan.Coupon{locked(t, before[0], "order-1"), locked(t, before[1], "order-1")}
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, before, after); ok || err != nil {
		t.Fatalf("swap with one coupon changed = %v, %v; want false", ok, err)
	}
	if back := coupons(t, s.TaskStores, 1, a.TemplateID)[0]; back.Status != quan.CouponAvailable {
		t.Fatalf("the unchanged coupon was written: %+v", back)
	}
	if back := coupons(t, s.TaskStores, 1, b.TemplateID)[0]; back.OrderID != "other" {
		t.Fatalf("the changed coupon was written: %+v", back)
	}
	// Both as they are now: both written (a locked, b released).
	nowA, nowB := coupons(t, s.TaskStores, 1, a.TemplateID)[0], coupons(t, s.TaskStores, 1, b.TemplateID)[0]
	freed := *nowB
	if err := freed.Release(walletNow); err != nil {
		t.Fatal(err)
	}
	before, after = []*quan.Coupon{nowA, nowB}, []*quan.Coupon{locked(t, nowA, "order-1"), &freed}
	if a.ID > b.ID {
		before, after = []*quan.Coupon{nowB, nowA}, []*quan.Coupon{&freed, after[0]}
	}
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, before, after); !ok || err != nil {
		t.Fatalf("swap of two unchanged coupons = %v, %v; want true", ok, err)
	}
	if back := coupons(t, s.TaskStores, 1, a.TemplateID)[0]; back.OrderID != "order-1" {
		t.Fatalf("first coupon after the swap: %+v", back)
	}
	if back := coupons(t, s.TaskStores, 1, b.TemplateID)[0]; back.Status != quan.CouponAvailable || back.OrderID != "" {
		t.Fatalf("second coupon after the swap: %+v", back)
	}
}

func testSwapOwner(t *testing.T, s WalletStores) {
	c := walletCoupons(t, s, 2)[0]
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{c}, []*quan.Coupon{locked(t, c, "order-1")}); ok || err != nil {
		t.Fatalf("user 1 swapping user 2's coupon = %v, %v; want false", ok, err)
	}
	if back := coupons(t, s.TaskStores, 2, c.TemplateID)[0]; back.Status != quan.CouponAvailable {
		t.Fatalf("user 1 changed user 2's coupon: %+v", back)
	}
}

// testDoubleSwap has 20 orders swap one coupon from one read at once:
// exactly one writes.
func testDoubleSwap(t *testing.T, s WalletStores) {
	c := walletCoupons(t, s, 1)[0]
	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		after := locked(t, c, string(rune('a'+i)))
		wg.Go(func() {
			ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{c}, []*quan.Coupon{after})
			if err != nil {
				t.Errorf("swap: %v", err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of 20 concurrent swaps wrote, want 1", won.Load())
	}
}

func testLapseCoupons(t *testing.T, s WalletStores) {
	cs := walletCoupons(t, s, 1, 2, 3, 4)
	end := cs[0].ValidEnd
	lock := func(c *quan.Coupon, until time.Time) {
		t.Helper()
		if _, err := s.Wallet.UpdateCoupons(t.Context(), c.UserID, []int64{c.ID}, func(x []*quan.Coupon) error {
			x[0].LockKey = "k"
			return x[0].Lock("o", walletNow, until)
		}); err != nil {
			t.Fatal(err)
		}
	}
	lock(cs[2], walletNow.Add(time.Minute)) // runs out inside the window
	lock(cs[3], end.Add(time.Hour))         // runs out after the window
	// Before anything is due nothing changes.
	if got, _, err := s.Wallet.LapseCoupons(t.Context(), walletNow, 10); err != nil || len(got) != 0 {
		t.Fatalf("LapseCoupons before anything is due: %d, %v", len(got), err)
	}
	// The lock of coupon 3 ran out: available again.
	got, was, err := s.Wallet.LapseCoupons(t.Context(), walletNow.Add(time.Minute), 10)
	if err != nil || len(got) != 1 || got[0].ID != cs[2].ID || got[0].Status != quan.CouponAvailable || was[0] != quan.CouponLocked {
		t.Fatalf("LapseCoupons after the first lock ran out: %+v %v, %v", got, was, err)
	}
	// After the window and the second lock: coupons 1, 2, 3 expire, 4's
	// lock runs out into expired; in batches of 2.
	later := end.Add(time.Hour)
	var all []*quan.Coupon
	for range 3 {
		got, _, err := s.Wallet.LapseCoupons(t.Context(), later, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 2 {
			t.Fatalf("a batch of %d, limit 2", len(got))
		}
		all = append(all, got...)
	}
	if len(all) != 4 {
		t.Fatalf("%d coupons lapsed after the window, want 4", len(all))
	}
	for _, c := range cs {
		back := coupons(t, s.TaskStores, c.UserID, c.TemplateID)[0]
		if back.Status != quan.CouponExpired || back.OrderID != "" || back.LockKey != "" {
			t.Errorf("coupon %d after the window: %s %q key %q, want expired, no order, no key", c.ID, back.Status, back.OrderID, back.LockKey)
		}
	}
}

// testLockKey: the key of a lock is written and read back with it by
// UpdateCoupons and SwapCoupons, changes on its own, and goes with the
// lock.
func testLockKey(t *testing.T, s WalletStores) {
	c := walletCoupons(t, s, 1)[0]
	read := func() *quan.Coupon {
		t.Helper()
		return coupons(t, s.TaskStores, 1, c.TemplateID)[0]
	}
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(cs []*quan.Coupon) error {
		cs[0].LockKey = "key-1"
		return cs[0].Lock("order-1", walletNow, walletNow.Add(time.Minute))
	}); err != nil {
		t.Fatal(err)
	}
	if back := read(); back.LockKey != "key-1" || back.OrderID != "order-1" {
		t.Fatalf("after UpdateCoupons: %+v, want locked by order-1 with key-1", back)
	}
	// Only the key changes: UpdateCoupons saves it.
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(cs []*quan.Coupon) error {
		cs[0].LockKey, cs[0].UpdatedAt = "key-2", walletNow.Add(time.Second)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := read()
	if before.LockKey != "key-2" {
		t.Fatalf("after a change of the key alone: %+v, want key-2", before)
	}
	after := *before
	after.LockKey, after.UpdatedAt = "key-3", walletNow.Add(2*time.Second)
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{before}, []*quan.Coupon{&after}); !ok || err != nil {
		t.Fatalf("swap of the key = %v, %v; want true", ok, err)
	}
	if back := read(); back.LockKey != "key-3" {
		t.Fatalf("after SwapCoupons: %+v, want key-3", back)
	}
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(cs []*quan.Coupon) error {
		return cs[0].Release(walletNow.Add(3 * time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	if back := read(); back.LockKey != "" || back.Status != quan.CouponAvailable {
		t.Fatalf("after the release: %+v, want available with no key", back)
	}
}

// TestArchiver runs the conformance suite of quan.Archiver: only used,
// expired or revoked coupons of ended templates, changed before the
// cutoff, move.
func TestArchiver(t *testing.T, newStores func(t *testing.T) WalletStores, archiver func(WalletStores) quan.Archiver) {
	t.Helper()
	t.Run("MovesOnlyWhatEndedTemplatesNoLongerNeed", func(t *testing.T) {
		s := newStores(t)
		a := archiver(s)
		ended := walletCoupons(t, s, 1, 2, 3)
		active := walletCoupons(t, s, 1)
		use := func(c *quan.Coupon, at time.Time) {
			t.Helper()
			if _, err := s.Wallet.UpdateCoupons(t.Context(), c.UserID, []int64{c.ID}, func(cs []*quan.Coupon) error {
				if err := cs[0].Lock("o", at, at.Add(time.Minute)); err != nil {
					return err
				}
				return cs[0].Redeem(at)
			}); err != nil {
				t.Fatal(err)
			}
		}
		use(ended[0], walletNow)
		use(ended[1], walletNow.Add(48*time.Hour)) // too recent
		use(active[0], walletNow)
		// ended[2] stays available: never archived.
		if _, err := s.Templates.UpdateTemplate(t.Context(), 1, ended[0].TemplateID, "test", "terminate", (*quan.Template).Terminate); err != nil {
			t.Fatal(err)
		}
		cutoff := walletNow.Add(24 * time.Hour)
		n, err := a.ArchiveCoupons(t.Context(), cutoff, cutoff.Add(time.Hour), 10)
		if err != nil || n != 1 {
			t.Fatalf("ArchiveCoupons = %d, %v; want 1", n, err)
		}
		if cs := coupons(t, s.TaskStores, 1, ended[0].TemplateID); len(cs) != 0 {
			t.Errorf("the archived coupon is still in the wallet: %+v", cs)
		}
		for _, c := range []*quan.Coupon{ended[1], ended[2], active[0]} {
			if cs := coupons(t, s.TaskStores, c.UserID, c.TemplateID); len(cs) != 1 {
				t.Errorf("coupon %d of user %d was archived", c.ID, c.UserID)
			}
		}
		if n, err := a.ArchiveCoupons(t.Context(), cutoff, cutoff, 10); err != nil || n != 0 {
			t.Fatalf("a second run: %d, %v; want nothing more", n, err)
		}
	})
	// A store may record an issued claim on its coupon: the claim must
	// still be found, as it was, once the coupon is archived.
	t.Run("KeepsTheClaimsOfWhatItMoves", func(t *testing.T) {
		s := newStores(t)
		a := archiver(s)
		tpl := activeTemplate(t, s.TaskStores, "archived claims", 10, 1)
		// Two: a store may keep the newest coupon back (SQLite does, so
		// that its id is not handed out again).
		cs := issueClaims(t, s.ClaimStores, newClaim(tpl.ID, 7), newClaim(tpl.ID, 8))
		c := cs[0]
		assertClaim(t, c, quan.ClaimIssued, "")
		at := claimAt.Add(time.Minute)
		if _, err := s.Wallet.UpdateCoupons(t.Context(), 7, []int64{c.CouponID}, func(cs []*quan.Coupon) error {
			if err := cs[0].Lock("o", at, at.Add(time.Minute)); err != nil {
				return err
			}
			return cs[0].Redeem(at)
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Templates.UpdateTemplate(t.Context(), 1, tpl.ID, "test", "terminate", (*quan.Template).Terminate); err != nil {
			t.Fatal(err)
		}
		cutoff := at.Add(24 * time.Hour)
		if n, err := a.ArchiveCoupons(t.Context(), cutoff, cutoff, 10); err != nil || n != 1 {
			t.Fatalf("ArchiveCoupons = %d, %v; want 1", n, err)
		}
		rec, err := s.Claims.Claim(t.Context(), c.ID)
		if err != nil || rec.Status != quan.ClaimIssued || rec.CouponID != c.CouponID || !rec.At.Equal(c.At) || !rec.DecidedAt.Equal(c.DecidedAt) {
			t.Fatalf("Claim(%s) after archiving its coupon = %+v, %v; want %+v", c.ID, rec, err, c)
		}
		if rec, err := s.Claims.FailClaim(t.Context(), c, "late", cutoff); err != nil || rec.Status != quan.ClaimIssued {
			t.Errorf("FailClaim after archiving = %+v, %v; want it issued", rec, err)
		}
	})
}
