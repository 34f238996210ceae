package quantest

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// StatsStores are the ports of one store whose changes the statistics
// count, and the statistics.
type StatsStores struct {
	WalletStores
	Codes    quan.CodeStore
	Archiver quan.Archiver
	Stats    quan.StatsStore
}

// TestStatsStore runs the conformance suite of quan.StatsStore: after
// each kind of change of coupons, the counters agree with a count of the
// coupons themselves, read back through the CouponStore.
func TestStatsStore(t *testing.T, newStores func(t *testing.T) StatsStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, StatsStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Template/NotFoundOrEmpty", testStatsNotFound)
	run("ApplyChunk/CountsTheIssued", testStatsDistribution)
	run("IssueClaims/CountsIssuedAndFailed", testStatsClaims)
	run("RedeemCode/CountsTheIssued", testStatsCodes)
	run("UpdateCoupons/LockRedeemRefund", testStatsUpdateCoupons)
	run("SwapCoupons/LockRedeemRelease", testStatsSwapCoupons)
	run("SwapCoupons/ConcurrentOrdersOfOneTemplate", testStatsSwapConcurrent)
	run("LapseCoupons/ExpiresAndReleases", testStatsLapse)
	run("ArchiveCoupons/ChangesNothing", testStatsArchive)
	run("AddRefusals/ByTemplateAndCode", testStatsRefusals)
	run("ShopStats/SumsTheShopsTemplates", testStatsShop)
}

// statsRange covers every hour the suite writes in.
var statsRange = quan.StatsRange{From: base.Add(-24 * time.Hour), To: base.Add(30 * 24 * time.Hour)}

// counted is what the suite compares: the counters a store keeps, without
// those the service works out.
type counted struct {
	Distribution, Claim, Code                 int64
	Available, Locked, Used, Expired, Revoked int64
	DiscountFen                               int64
	Hourly                                    map[time.Time]quan.HourStats
}

func countedOf(c quan.StatsCounts, hourly []quan.HourStats) counted {
	out := counted{
		Distribution: c.Issued.Distribution, Claim: c.Issued.Claim, Code: c.Issued.Code,
		Available: c.Available, Locked: c.Locked, Used: c.Used, Expired: c.Expired, Revoked: c.Revoked,
		DiscountFen: c.DiscountFen, Hourly: map[time.Time]quan.HourStats{},
	}
	for _, h := range hourly {
		if h.Issued != 0 || h.Used != 0 {
			out.Hourly[h.Hour.UTC()] = quan.HourStats{Hour: h.Hour.UTC(), Issued: h.Issued, Used: h.Used}
		}
	}
	return out
}

// recount counts the coupons of tpl that users hold, one by one: what the
// counters must say.
func recount(t *testing.T, s StatsStores, tpl int64, users ...int64) counted {
	t.Helper()
	c := counted{Hourly: map[time.Time]quan.HourStats{}}
	hour := func(at time.Time) *quan.HourStats {
		h := at.UTC().Truncate(time.Hour)
		x := c.Hourly[h]
		x.Hour = h
		c.Hourly[h] = x
		return &x
	}
	for _, u := range users {
		for _, cp := range coupons(t, s.TaskStores, u, tpl) {
			switch cp.Source {
			case quan.FromDistribution:
				c.Distribution++
			case quan.FromClaim:
				c.Claim++
			case quan.FromCode:
				c.Code++
			}
			switch cp.Status {
			case quan.CouponAvailable:
				c.Available++
			case quan.CouponLocked:
				c.Locked++
			case quan.CouponUsed:
				c.Used++
				c.DiscountFen += cp.Discount
			case quan.CouponExpired:
				c.Expired++
			case quan.CouponRevoked:
				c.Revoked++
			}
			h := hour(cp.CreatedAt)
			h.Issued++
			c.Hourly[h.Hour] = *h
			if cp.Status == quan.CouponUsed {
				h := hour(cp.UpdatedAt)
				h.Used++
				c.Hourly[h.Hour] = *h
			}
		}
	}
	return c
}

// templateStats returns the statistics of tpl, seen by AnyShop.
func templateStats(t *testing.T, s StatsStores, tpl int64) *quan.TemplateStats {
	t.Helper()
	st, err := s.Stats.TemplateStats(t.Context(), quan.AnyShop, tpl, statsRange)
	if err != nil {
		t.Fatalf("TemplateStats(%d): %v", tpl, err)
	}
	if !slices.IsSortedFunc(st.Hourly, func(a, b quan.HourStats) int { return a.Hour.Compare(b.Hour) }) {
		t.Errorf("TemplateStats(%d): hours out of order: %+v", tpl, st.Hourly)
	}
	return st
}

// assertStats checks the counters of tpl against a recount of the coupons
// users hold, after what.
func assertStats(t *testing.T, s StatsStores, what string, tpl int64, users ...int64) *quan.TemplateStats {
	t.Helper()
	st := templateStats(t, s, tpl)
	got, want := countedOf(st.StatsCounts, st.Hourly), recount(t, s, tpl, users...)
	gh, wh := got.Hourly, want.Hourly
	got.Hourly, want.Hourly = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after %s, template %d counts\n got %+v\nwant %+v (the coupons)", what, tpl, got, want)
	}
	if !maps.EqualFunc(gh, wh, func(a, b quan.HourStats) bool { return a == b }) {
		t.Errorf("after %s, template %d hours\n got %v\nwant %v (the coupons)", what, tpl, gh, wh)
	}
	return st
}

func testStatsNotFound(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "no coupons", 10, 1)
	st := assertStats(t, s, "nothing", tpl.ID)
	if st.TemplateID != tpl.ID || st.ShopNo != tpl.ShopNo {
		t.Errorf("TemplateStats = template %d shop %d, want %d %d", st.TemplateID, st.ShopNo, tpl.ID, tpl.ShopNo)
	}
	if _, err := s.Stats.TemplateStats(t.Context(), tpl.ShopNo+1, tpl.ID, statsRange); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("TemplateStats of another shop's template: %v, want ErrNotFound", err)
	}
	if _, err := s.Stats.TemplateStats(t.Context(), quan.AnyShop, tpl.ID+100, statsRange); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("TemplateStats of no template: %v, want ErrNotFound", err)
	}
	if got, err := s.Stats.TemplateStats(t.Context(), tpl.ShopNo, tpl.ID, statsRange); err != nil || got.TemplateID != tpl.ID {
		t.Errorf("TemplateStats of its own shop: %+v, %v", got, err)
	}
}

func testStatsDistribution(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "distributed", 4, 1)
	task := runningTask(t, s.TaskStores, tpl, "d")
	apply(t, s.TaskStores, chunk(task, 1, user(1, 1), user(2, 2), bad(3, "x", quan.CauseInvalidID)),
		quan.TaskCounts{Rows: 3, Valid: 2, Issued: 2, Failed: quan.FailedCounts{InvalidID: 1}})
	st := assertStats(t, s, "one chunk", tpl.ID, 1, 2, 3, 4)
	if st.Issued.Distribution != 2 || st.Available != 2 {
		t.Errorf("after one chunk: %+v, want 2 issued, 2 available", st.StatsCounts)
	}
	// Chunk 3 comes an hour later: its coupons count in their own hour.
	c := chunk(task, 3, user(5, 3), user(6, 4), user(7, 5))
	c.Now = c.Now.Add(time.Hour)
	apply(t, s.TaskStores, c, quan.TaskCounts{Rows: 3, Valid: 2, Issued: 2, Failed: quan.FailedCounts{OutOfStock: 1}})
	// A chunk applied again changes nothing.
	if _, err := s.Tasks.ApplyChunk(t.Context(), chunk(task, 1, user(1, 1), user(2, 2))); !errors.Is(err, quan.ErrChunkApplied) {
		t.Fatalf("chunk 1 again: %v", err)
	}
	st = assertStats(t, s, "two chunks", tpl.ID, 1, 2, 3, 4, 5)
	if st.Issued.Distribution != 4 || len(st.Hourly) != 2 {
		t.Errorf("after two chunks: %+v over %d hours, want 4 issued over 2 hours", st.StatsCounts, len(st.Hourly))
	}
}

func testStatsClaims(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "claimed", 2, 1)
	first := []*quan.Claim{newClaim(tpl.ID, 1), newClaim(tpl.ID, 2), newClaim(tpl.ID, 3)}
	got := issueClaims(t, s.ClaimStores, first...)
	assertClaim(t, got[2], quan.ClaimFailed, string(quan.CauseOutOfStock))
	st := assertStats(t, s, "three claims for two coupons", tpl.ID, 1, 2, 3)
	if st.Issued.Claim != 2 || st.Claims.Failed[string(quan.CauseOutOfStock)] != 1 {
		t.Errorf("after the claims: %+v, want 2 issued by claim, 1 failed out of stock", st.StatsCounts)
	}
	// Claims decided before are not counted again.
	issueClaims(t, s.ClaimStores, first[0], first[2])
	c := newClaim(tpl.ID, 4)
	if _, err := s.Claims.FailClaim(t.Context(), c, quan.ReasonAbandoned, claimAt); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claims.FailClaim(t.Context(), c, quan.ReasonAbandoned, claimAt); err != nil {
		t.Fatal(err)
	}
	st = assertStats(t, s, "claims again and a failed one", tpl.ID, 1, 2, 3, 4)
	want := map[string]int64{string(quan.CauseOutOfStock): 1, quan.ReasonAbandoned: 1}
	if !maps.Equal(st.Claims.Failed, want) || len(st.Claims.Refused) != 0 {
		t.Errorf("claims failed %v refused %v, want %v and none", st.Claims.Failed, st.Claims.Refused, want)
	}
}

func testStatsCodes(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "codes", 5, 1)
	cs := CodeStores{TaskStores: s.TaskStores, Codes: s.Codes}
	b := codeBatchOf(t, cs, tpl, 2)
	codes := newCodes(t, 2)
	if _, err := s.Codes.AddCodes(t.Context(), b.ID, codes, base); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time returns the coupon, and counts nothing
		if _, err := s.Codes.RedeemCode(t.Context(), codes[0], 1, claimAt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Codes.RedeemCode(t.Context(), codes[1], 1, claimAt); quan.ErrorCode(err) != quan.ELIMIT {
		t.Fatalf("a second code for the same user: %v", err)
	}
	st := assertStats(t, s, "a code redeemed", tpl.ID, 1)
	if st.Issued.Code != 1 {
		t.Errorf("after a code: %+v, want 1 issued by code", st.StatsCounts)
	}
}

// lockAt holds c for order at at, taking discount off it.
func lockAt(c *quan.Coupon, order string, discount int64, at time.Time) error {
	if err := c.Lock(order, at, at.Add(15*time.Minute)); err != nil {
		return err
	}
	c.LockKey, c.Discount = "k-"+order, discount
	return nil
}

// updateCoupon runs fn on coupon id of user by UpdateCoupons.
func updateCoupon(t *testing.T, s StatsStores, user, id int64, fn func(*quan.Coupon) error) {
	t.Helper()
	if _, err := s.Wallet.UpdateCoupons(t.Context(), user, []int64{id}, func(cs []*quan.Coupon) error { return fn(cs[0]) }); err != nil {
		t.Fatalf("UpdateCoupons(%d, %d): %v", user, id, err)
	}
}

func testStatsUpdateCoupons(t *testing.T, s StatsStores) {
	cs := walletCoupons(t, s.WalletStores, 1, 2)
	tpl := cs[0].TemplateID
	updateCoupon(t, s, 1, cs[0].ID, func(c *quan.Coupon) error { return lockAt(c, "o-1", 700, walletNow) })
	assertStats(t, s, "a lock", tpl, 1, 2)
	updateCoupon(t, s, 1, cs[0].ID, func(c *quan.Coupon) error { return c.Redeem(walletNow.Add(time.Minute)) })
	st := assertStats(t, s, "a redemption", tpl, 1, 2)
	if st.Used != 1 || st.DiscountFen != 700 {
		t.Errorf("after a redemption: %+v, want 1 used, 700 fen", st.StatsCounts)
	}
	// Used two hours on, the other coupon counts in its own hour.
	later := walletNow.Add(2 * time.Hour)
	updateCoupon(t, s, 2, cs[1].ID, func(c *quan.Coupon) error { return lockAt(c, "o-2", 300, later) })
	updateCoupon(t, s, 2, cs[1].ID, func(c *quan.Coupon) error { return c.Redeem(later) })
	assertStats(t, s, "a second redemption", tpl, 1, 2)
	updateCoupon(t, s, 1, cs[0].ID, func(c *quan.Coupon) error { return c.Refund(later) })
	st = assertStats(t, s, "a refund", tpl, 1, 2)
	if st.Used != 1 || st.DiscountFen != 300 || st.Available != 1 {
		t.Errorf("after a refund: %+v, want 1 used for 300 fen, 1 available", st.StatsCounts)
	}
	updateCoupon(t, s, 1, cs[0].ID, func(c *quan.Coupon) error { return c.Revoke(later) })
	st = assertStats(t, s, "a revocation", tpl, 1, 2)
	if st.Revoked != 1 {
		t.Errorf("after a revocation: %+v, want 1 revoked", st.StatsCounts)
	}
}

// swap changes the coupons of user as fn makes them, by SwapCoupons.
func swap(t *testing.T, s StatsStores, user, tpl int64, fn func(*quan.Coupon) error) {
	t.Helper()
	before := coupons(t, s.TaskStores, user, tpl)
	after := make([]*quan.Coupon, len(before))
	for i, c := range before {
		cp := *c
		if err := fn(&cp); err != nil {
			t.Fatal(err)
		}
		after[i] = &cp
	}
	if ok, err := s.Wallet.SwapCoupons(t.Context(), user, before, after); err != nil || !ok {
		t.Fatalf("SwapCoupons: %v, %v", ok, err)
	}
}

func testStatsSwapCoupons(t *testing.T, s StatsStores) {
	cs := walletCoupons(t, s.WalletStores, 1, 2)
	tpl := cs[0].TemplateID
	swap(t, s, 1, tpl, func(c *quan.Coupon) error { return lockAt(c, "o-1", 500, walletNow) })
	swap(t, s, 2, tpl, func(c *quan.Coupon) error { return lockAt(c, "o-2", 200, walletNow) })
	assertStats(t, s, "two locks", tpl, 1, 2)
	swap(t, s, 1, tpl, func(c *quan.Coupon) error { return c.Redeem(walletNow) })
	swap(t, s, 2, tpl, func(c *quan.Coupon) error { return c.Release(walletNow) })
	st := assertStats(t, s, "a redemption and a release", tpl, 1, 2)
	if st.Used != 1 || st.Locked != 0 || st.Available != 1 || st.DiscountFen != 500 {
		t.Errorf("after a redemption and a release: %+v, want 1 used for 500 fen, 1 available", st.StatsCounts)
	}
	// A swap that does not write counts nothing.
	before := coupons(t, s.TaskStores, 2, tpl)
	stale := *before[0]
	stale.UpdatedAt = stale.UpdatedAt.Add(-time.Second)
	after := stale
	if err := lockAt(&after, "o-3", 100, walletNow); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 2, []*quan.Coupon{&stale}, []*quan.Coupon{&after}); err != nil || ok {
		t.Fatalf("a stale swap: %v, %v; want no write", ok, err)
	}
	assertStats(t, s, "a stale swap", tpl, 1, 2)
}

// testStatsSwapConcurrent takes the orders of many users of one template
// through the wallet's ways at once, two orders racing for each coupon
// from one read: lock, redeem, release and refund by SwapCoupons (the way
// a store may count in the coupon's own statement), some by UpdateCoupons,
// in two hours. Exactly one order of each coupon wins, and the counters
// then agree with the coupons.
func testStatsSwapConcurrent(t *testing.T, s StatsStores) {
	const n = 24
	users := make([]int64, n)
	for i := range users {
		users[i] = int64(i + 1)
	}
	cs := walletCoupons(t, s.WalletStores, users...)
	tpl := cs[0].TemplateID
	later := walletNow.Add(2 * time.Hour)
	ctx := t.Context()
	// step changes the coupon of user as fn makes it from what the store
	// holds now, by SwapCoupons or, locked, by UpdateCoupons.
	step := func(user int64, locked bool, fn func(*quan.Coupon) error) error {
		if locked {
			_, err := s.Wallet.UpdateCoupons(ctx, user, []int64{cs[user-1].ID}, func(cs []*quan.Coupon) error { return fn(cs[0]) })
			return err
		}
		before, err := s.Coupons.UserCoupons(ctx, user, tpl)
		if err != nil || len(before) != 1 {
			return fmt.Errorf("coupons of user %d: %d, %v", user, len(before), err)
		}
		after := *before[0]
		if err := fn(&after); err != nil {
			return err
		}
		// No one else changes the coupon now: the swap must write.
		if ok, err := s.Wallet.SwapCoupons(ctx, user, before, []*quan.Coupon{&after}); err != nil || !ok {
			return fmt.Errorf("SwapCoupons of user %d: %v, %v", user, ok, err)
		}
		return nil
	}
	type change struct {
		locked bool
		fn     func(*quan.Coupon) error
	}
	redeem := func(at time.Time) change {
		return change{fn: func(c *quan.Coupon) error { return c.Redeem(at) }}
	}
	refund := change{fn: func(c *quan.Coupon) error { return c.Refund(later) }}
	// rest is what the order that locked coupon i does next, in turn.
	rest := func(i int) []change {
		switch i % 4 {
		case 0:
			return []change{redeem(walletNow)}
		case 1:
			return []change{redeem(later), refund} // locked later
		case 2:
			return []change{{fn: func(c *quan.Coupon) error { return c.Release(walletNow) }},
				{locked: true, fn: func(c *quan.Coupon) error { return lockAt(c, "again", 50, later) }},
				redeem(later)}
		default:
			return []change{redeem(later), {locked: true, fn: refund.fn}} // locked later
		}
	}
	wins := make([]atomic.Int32, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range cs {
		read := *c
		for _, order := range []string{"a", "b"} {
			wg.Go(func() {
				<-start
				before, after := read, read
				at := walletNow
				if i%2 == 1 {
					at = later
				}
				if err := lockAt(&after, fmt.Sprintf("o-%d-%s", c.UserID, order), 100+int64(i), at); err != nil {
					t.Error(err)
					return
				}
				ok, err := s.Wallet.SwapCoupons(ctx, c.UserID, []*quan.Coupon{&before}, []*quan.Coupon{&after})
				if err != nil {
					t.Errorf("lock the coupon of user %d: %v", c.UserID, err)
				}
				if !ok {
					return
				}
				wins[i].Add(1)
				for _, ch := range rest(i) {
					if err := step(c.UserID, ch.locked, ch.fn); err != nil {
						t.Errorf("the order of user %d: %v", c.UserID, err)
						return
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	for i := range wins {
		if w := wins[i].Load(); w != 1 {
			t.Errorf("the coupon of user %d: %d orders locked it from one read, want 1", users[i], w)
		}
	}
	st := assertStats(t, s, "concurrent orders", tpl, users...)
	if st.Used != n/2 || st.Available != n/2 || st.Locked != 0 {
		t.Errorf("after concurrent orders: %+v, want %d used, %d available", st.StatsCounts, n/2, n/2)
	}
}

func testStatsLapse(t *testing.T, s StatsStores) {
	cs := walletCoupons(t, s.WalletStores, 1, 2, 3)
	tpl := cs[0].TemplateID
	updateCoupon(t, s, 1, cs[0].ID, func(c *quan.Coupon) error { return lockAt(c, "o-1", 100, walletNow) })
	// The lock runs out: the coupon is available again.
	if _, _, err := s.Wallet.LapseCoupons(t.Context(), walletNow.Add(time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	st := assertStats(t, s, "a lock ran out", tpl, 1, 2, 3)
	if st.Locked != 0 || st.Available != 3 {
		t.Errorf("after a lock ran out: %+v, want 3 available", st.StatsCounts)
	}
	updateCoupon(t, s, 2, cs[1].ID, func(c *quan.Coupon) error { return lockAt(c, "o-2", 100, walletNow) })
	updateCoupon(t, s, 2, cs[1].ID, func(c *quan.Coupon) error { return c.Redeem(walletNow) })
	// The window closes: the available coupons expire, the used one stays.
	end := cs[0].ValidEnd.Add(time.Minute)
	for {
		changed, _, err := s.Wallet.LapseCoupons(t.Context(), end, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(changed) == 0 {
			break
		}
	}
	st = assertStats(t, s, "the window closed", tpl, 1, 2, 3)
	if st.Expired != 2 || st.Used != 1 || st.Available != 0 {
		t.Errorf("after the window closed: %+v, want 2 expired, 1 used", st.StatsCounts)
	}
}

func testStatsArchive(t *testing.T, s StatsStores) {
	cs := walletCoupons(t, s.WalletStores, 1, 2, 3)
	tpl := cs[0].TemplateID
	for _, c := range cs[:2] {
		updateCoupon(t, s, c.UserID, c.ID, func(c *quan.Coupon) error { return lockAt(c, "o", 100, walletNow) })
		updateCoupon(t, s, c.UserID, c.ID, func(c *quan.Coupon) error { return c.Redeem(walletNow) })
	}
	if _, err := s.Templates.UpdateTemplate(t.Context(), 1, tpl, "test", "terminate", (*quan.Template).Terminate); err != nil {
		t.Fatal(err)
	}
	before := assertStats(t, s, "two redemptions", tpl, 1, 2, 3)
	cutoff := walletNow.Add(24 * time.Hour)
	if n, err := s.Archiver.ArchiveCoupons(t.Context(), cutoff, cutoff, 10); err != nil || n == 0 {
		t.Fatalf("ArchiveCoupons = %d, %v; want some", n, err)
	}
	after := templateStats(t, s, tpl)
	if b, a := countedOf(before.StatsCounts, before.Hourly), countedOf(after.StatsCounts, after.Hourly); !reflect.DeepEqual(a, b) {
		t.Errorf("archiving changed the statistics:\nbefore %+v\n after %+v", b, a)
	}
}

func testStatsRefusals(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "refused", 1, 1)
	other := activeTemplate(t, s.TaskStores, "other", 1, 1)
	add := func(cs ...quan.RefusalCount) {
		t.Helper()
		if err := s.Stats.AddRefusals(t.Context(), cs); err != nil {
			t.Fatalf("AddRefusals: %v", err)
		}
	}
	add(quan.RefusalCount{TemplateID: tpl.ID, Code: quan.ESOLDOUT, N: 3}, quan.RefusalCount{TemplateID: other.ID, Code: quan.ELIMIT, N: 1})
	add(quan.RefusalCount{TemplateID: tpl.ID, Code: quan.ESOLDOUT, N: 2}, quan.RefusalCount{TemplateID: tpl.ID, Code: quan.ERATELIMITED, N: 4},
		quan.RefusalCount{TemplateID: other.ID + 100, Code: quan.ESOLDOUT, N: 9}) // no such template: dropped
	add()
	st := templateStats(t, s, tpl.ID)
	if want := map[string]int64{quan.ESOLDOUT: 5, quan.ERATELIMITED: 4}; !maps.Equal(st.Claims.Refused, want) || len(st.Claims.Failed) != 0 {
		t.Errorf("refused %v failed %v, want %v and none", st.Claims.Refused, st.Claims.Failed, want)
	}
	shop, err := s.Stats.ShopStats(t.Context(), tpl.ShopNo, statsRange)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{quan.ESOLDOUT: 5, quan.ERATELIMITED: 4, quan.ELIMIT: 1}; !maps.Equal(shop.Claims.Refused, want) {
		t.Errorf("shop refused %v, want %v", shop.Claims.Refused, want)
	}
}

func testStatsShop(t *testing.T, s StatsStores) {
	a := activeTemplate(t, s.TaskStores, "a", 10, 1)
	b := activeTemplate(t, s.TaskStores, "b", 10, 1)
	c := newTemplate(t, 2, "of shop 2")
	c.Status, c.Stock, c.TotalStock, c.PerUserLimit = quan.TemplateActive, 10, 10, 1
	create(t, s.Templates, c)
	issueClaims(t, s.ClaimStores, newClaim(a.ID, 1), newClaim(a.ID, 2), newClaim(b.ID, 1), newClaim(c.ID, 1))
	cp := coupons(t, s.TaskStores, 1, b.ID)[0]
	updateCoupon(t, s, 1, cp.ID, func(c *quan.Coupon) error { return lockAt(c, "o", 250, walletNow) })
	updateCoupon(t, s, 1, cp.ID, func(c *quan.Coupon) error { return c.Redeem(walletNow) })

	shop := func(no int64) *quan.ShopStats {
		t.Helper()
		st, err := s.Stats.ShopStats(t.Context(), no, statsRange)
		if err != nil {
			t.Fatalf("ShopStats(%d): %v", no, err)
		}
		return st
	}
	sum := func(ts ...*quan.TemplateStats) counted {
		out := counted{Hourly: map[time.Time]quan.HourStats{}}
		for _, st := range ts {
			c := countedOf(st.StatsCounts, st.Hourly)
			out.Distribution += c.Distribution
			out.Claim += c.Claim
			out.Code += c.Code
			out.Available += c.Available
			out.Locked += c.Locked
			out.Used += c.Used
			out.Expired += c.Expired
			out.Revoked += c.Revoked
			out.DiscountFen += c.DiscountFen
			for h, x := range c.Hourly {
				y := out.Hourly[h]
				y.Hour, y.Issued, y.Used = h, y.Issued+x.Issued, y.Used+x.Used
				out.Hourly[h] = y
			}
		}
		return out
	}
	check := func(what string, got *quan.ShopStats, templates int64, want counted) {
		t.Helper()
		g := countedOf(got.StatsCounts, got.Hourly)
		gh, wh := g.Hourly, want.Hourly
		g.Hourly, want.Hourly = nil, nil
		if !reflect.DeepEqual(g, want) || !maps.Equal(gh, wh) || got.Templates != templates {
			t.Errorf("%s: %d templates %+v %v\nwant %d templates %+v %v", what, got.Templates, g, gh, templates, want, wh)
		}
	}
	ta, tb, tc := assertStats(t, s, "claims", a.ID, 1, 2), assertStats(t, s, "a redemption", b.ID, 1), assertStats(t, s, "a claim", c.ID, 1)
	check("shop 1", shop(1), 2, sum(ta, tb))
	check("shop 2", shop(2), 1, sum(tc))
	check("every shop", shop(quan.AnyShop), 3, sum(ta, tb, tc))
	check("a shop with no template", shop(9), 0, sum())
	if st := shop(1); st.DiscountFen != 250 || st.Used != 1 || st.Issued.Claim != 3 {
		t.Errorf("shop 1: %+v, want 3 issued by claim, 1 used for 250 fen", st.StatsCounts)
	}
}
