package quantest

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/wallet"
)

// walletPorts joins a store's coupon ports as quan.CouponStores.
type walletPorts struct {
	quan.CouponStore
	quan.WalletStore
}

// budgetTemplate stores an active 满 100 减 20 template with budget fen and
// issues one coupon of it to each of users by claim.
func budgetTemplate(t *testing.T, s WalletStores, budget int64, users int) (*quan.Template, []*quan.Coupon) {
	t.Helper()
	tpl := newTemplate(t, 1, "budget")
	tpl.Status = quan.TemplateActive
	tpl.Stock, tpl.TotalStock, tpl.PerUserLimit = int64(users), int64(users), 1
	tpl.Budget = budget
	mustValid(t, tpl)
	tpl = create(t, s.Templates, tpl)
	claims := make([]*quan.Claim, users)
	for i := range claims {
		claims[i] = newClaim(tpl.ID, int64(i+1))
	}
	var out []*quan.Coupon
	for i, c := range issueClaims(t, s.ClaimStores, claims...) {
		if c.Status != quan.ClaimIssued {
			t.Fatalf("claim of user %d: %+v", i+1, c)
		}
		out = append(out, coupons(t, s.TaskStores, int64(i+1), tpl.ID)[0])
	}
	return tpl, out
}

// budgetWallet is a wallet.Service on s at the time now returns.
func budgetWallet(s WalletStores, now func() time.Time) *wallet.Service {
	return &wallet.Service{Coupons: walletPorts{s.Coupons, s.Wallet}, Templates: s.Templates, Now: now}
}

// budgetOrder is an order the budget template takes 20 yuan off.
var budgetOrder = []quan.OrderItem{{SKU: "g-1", ShopNo: 1, UnitPrice: 10000, Quantity: 1}}

const budgetOff = 2000 // what the template takes off budgetOrder

func usage(t *testing.T, s WalletStores, tpl int64) quan.BudgetUsage {
	t.Helper()
	u, err := s.Wallet.BudgetUsage(t.Context(), tpl)
	if err != nil {
		t.Fatalf("BudgetUsage(%d): %v", tpl, err)
	}
	return u
}

func wantUsage(t *testing.T, s WalletStores, tpl int64, reserved, spent int64) {
	t.Helper()
	if u := usage(t, s, tpl); u.Reserved != reserved || u.Spent != spent {
		t.Fatalf("budget of template %d: %+v, want reserved %d, spent %d", tpl, u, reserved, spent)
	}
}

// testBudgetMoves: a lock reserves, a redeem spends, a release, a refund
// and a lock running out give back; a lock the budget left cannot cover
// is ENOTUSABLE naming budget_spent, and the quote says so.
func testBudgetMoves(t *testing.T, s WalletStores) {
	now := walletNow
	w := budgetWallet(s, func() time.Time { return now })
	tpl, cs := budgetTemplate(t, s, 2*budgetOff+budgetOff/2, 3)                                              // room for two and a half
	user := func(i int) quan.Identity { return orderSystem.ForUser(int64(i + 1)) }                           // settles
	shopper := func(i int) quan.Identity { return quan.Identity{Role: quan.RoleUser, UserID: int64(i + 1)} } // quotes
	lock := func(i int) error {
		_, err := w.Lock(t.Context(), user(i), fmt.Sprintf("o-%d", i), wallet.LockRequest{
			Items: budgetOrder, CouponIDs: []int64{cs[i].ID}, ExpectedDiscount: budgetOff})
		return err
	}
	if u := usage(t, s, tpl.ID); u.Budget != tpl.Budget || u.Left() != tpl.Budget {
		t.Fatalf("budget before any lock: %+v, want all of %d left", u, tpl.Budget)
	}
	for i := range 2 {
		if err := lock(i); err != nil {
			t.Fatalf("lock %d: %v", i, err)
		}
	}
	wantUsage(t, s, tpl.ID, 2*budgetOff, 0)
	err := lock(2)
	if quan.ErrorCode(err) != quan.ENOTUSABLE || !strings.Contains(err.Error(), quan.ReasonBudgetSpent) {
		t.Fatalf("lock over the budget: %v, want %s naming %s", err, quan.ENOTUSABLE, quan.ReasonBudgetSpent)
	}
	q, err := w.Quote(t.Context(), shopper(2), budgetOrder, "")
	if err != nil || len(q.Coupons) != 1 || q.Coupons[0].Usable || q.Coupons[0].Reason != quan.ReasonBudgetSpent || len(q.Combination) != 0 {
		t.Fatalf("quote over the budget: %+v, %v; want the coupon unusable: %s", q, err, quan.ReasonBudgetSpent)
	}
	wantUsage(t, s, tpl.ID, 2*budgetOff, 0)
	if _, err := w.Redeem(t.Context(), user(0), "o-0"); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, tpl.ID, budgetOff, budgetOff)
	if _, err := w.Release(t.Context(), user(1), "o-1"); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, tpl.ID, 0, budgetOff)
	if q, err := w.Quote(t.Context(), shopper(2), budgetOrder, ""); err != nil || !q.Coupons[0].Usable {
		t.Fatalf("quote with the budget given back: %+v, %v", q, err)
	}
	if err := lock(2); err != nil {
		t.Fatalf("lock once the budget was given back: %v", err)
	}
	wantUsage(t, s, tpl.ID, budgetOff, budgetOff)
	if _, err := w.Refund(t.Context(), user(0), "o-0"); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, tpl.ID, budgetOff, 0)
	// The lock of o-2 runs out: the sweep gives its reservation back.
	now = now.Add(time.Hour)
	if _, _, err := s.Wallet.LapseCoupons(t.Context(), now, 100); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, s, tpl.ID, 0, 0)
}

// testBudgetStampede: a budget for 50 redemptions, 200 users locking and
// redeeming at once: exactly 50 succeed, and the budget is spent, never
// more.
func testBudgetStampede(t *testing.T, s WalletStores) {
	const users, room = 200, 50
	w := budgetWallet(s, func() time.Time { return walletNow })
	tpl, cs := budgetTemplate(t, s, room*budgetOff, users)
	start := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		redeemed int
		other    []error
	)
	for i := range users {
		wg.Go(func() {
			<-start
			who := orderSystem.ForUser(int64(i + 1))
			order := fmt.Sprintf("stampede-%d", i)
			_, err := w.Lock(t.Context(), who, order, wallet.LockRequest{
				Items: budgetOrder, CouponIDs: []int64{cs[i].ID}, ExpectedDiscount: budgetOff})
			if err == nil {
				_, err = w.Redeem(t.Context(), who, order)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				redeemed++
			case quan.ErrorCode(err) != quan.ENOTUSABLE:
				other = append(other, err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range other {
		t.Errorf("a lock or redeem failed otherwise than the budget: %v", err)
	}
	if redeemed != room {
		t.Errorf("%d redeemed, want exactly %d", redeemed, room)
	}
	u := usage(t, s, tpl.ID)
	if u.Spent != u.Budget || u.Reserved != 0 {
		t.Errorf("budget after the stampede: %+v, want all of it spent and nothing reserved", u)
	}
}

// periodTemplate stores an active template of shop 1 whose users may
// receive 5 coupons, 1 a day and 2 a week.
func periodTemplate(t *testing.T, s quan.TemplateStore, name string) *quan.Template {
	t.Helper()
	tpl := newTemplate(t, 1, name)
	tpl.Status = quan.TemplateActive
	tpl.PerUserLimit, tpl.PerUserDaily, tpl.PerUserWeekly = 5, 1, 2
	mustValid(t, tpl)
	return create(t, s, tpl)
}

// testIssueClaimsPeriods: the store refuses a claim over a period limit
// whatever the cache let through, counting the coupons a user received by
// the Shanghai day and week of each claim's At, in the batch and before.
func testIssueClaimsPeriods(t *testing.T, s ClaimStores) {
	tpl := periodTemplate(t, s.Templates, "periods")
	monday := quan.ShanghaiWeekStart(quan.ShanghaiWeek(base) + 1)
	claim := func(d time.Duration) *quan.Claim {
		c := newClaim(tpl.ID, 1)
		c.At = monday.Add(d)
		return c
	}
	decide := func(want []string, cs ...*quan.Claim) {
		t.Helper()
		got, err := s.Claims.IssueClaims(t.Context(), cs, monday.Add(72*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range got {
			if c.Reason != want[i] || (want[i] == "") != (c.Status == quan.ClaimIssued) {
				t.Errorf("claim at %s: %s %q, want reason %q", cs[i].At, c.Status, c.Reason, want[i])
			}
		}
	}
	daily, weekly := string(quan.CauseDailyLimit), string(quan.CauseWeeklyLimit)
	decide([]string{"", daily}, claim(-time.Minute), claim(-30*time.Second)) // Sunday 23:59
	decide([]string{""}, claim(time.Minute))                                 // Monday 00:01: another day and week
	decide([]string{daily, "", weekly}, claim(2*time.Minute), claim(24*time.Hour), claim(48*time.Hour))
	if n := len(coupons(t, s.TaskStores, 1, tpl.ID)); n != 3 {
		t.Errorf("user 1 holds %d coupons, want 3", n)
	}
}

// testHoldingsPeriods: CouponStore.Holdings counts, with an instant, the
// coupons each user received in its Shanghai day and week, by the claim's
// At or, for a coupon of a distribution, its creation, the bounds of the
// day and the week included at their start and not at their end; and
// without one, the counts alone.
func testHoldingsPeriods(t *testing.T, s ClaimStores) {
	tpl := newTemplate(t, 1, "periods")
	tpl.Status = quan.TemplateActive
	tpl.PerUserLimit, tpl.PerUserDaily, tpl.PerUserWeekly = 10, 2, 5
	mustValid(t, tpl)
	tpl = create(t, s.Templates, tpl)
	monday := quan.ShanghaiWeekStart(quan.ShanghaiWeek(base) + 1)
	wednesday := monday.Add(48 * time.Hour)
	at := wednesday.Add(12 * time.Hour)
	var cs []*quan.Claim
	for _, c := range []struct {
		user int64
		at   time.Duration // from monday
	}{
		{1, -time.Second},                 // Sunday: the week before
		{1, 10 * time.Hour},               // Monday: the week
		{1, 48 * time.Hour},               // Wednesday 00:00: the day and the week
		{1, 72*time.Hour - time.Second},   // Wednesday 23:59:59: the day and the week
		{1, 72 * time.Hour},               // Thursday 00:00: the week
		{1, 7 * 24 * time.Hour},           // the next Monday 00:00: neither
		{3, -time.Hour},                   // Sunday: neither
		{4, 48*time.Hour + 9*time.Minute}, // Wednesday
	} {
		cl := newClaim(tpl.ID, c.user)
		cl.At = monday.Add(c.at)
		cs = append(cs, cl)
	}
	got, err := s.Claims.IssueClaims(t.Context(), cs, monday.Add(8*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Status != quan.ClaimIssued {
			t.Fatalf("claim of user %d at %s: %s %q, want issued", c.UserID, c.At, c.Status, c.Reason)
		}
	}
	// User 2 receives one of a distribution on Wednesday morning.
	task := newTask(t, tpl.ShopNo, tpl.ID, "periods")
	task.Status, task.StartedAt, task.UpdatedAt = quan.TaskRunning, base, base
	task.Owner, task.LeaseUntil = runner, wednesday.Add(24*time.Hour)
	task = createTask(t, s.TaskStores, task)
	c := chunk(task, 1, user(2, 2))
	c.Now = wednesday.Add(8 * time.Hour)
	apply(t, s.TaskStores, c, issued(1))

	day := quan.ShanghaiDay(at)
	want := map[int64]quan.Holding{
		1: {UserID: 1, Count: 6, Day: 2, Week: 4, PeriodDay: day},
		2: {UserID: 2, Count: 1, Day: 1, Week: 1, PeriodDay: day},
		3: {UserID: 3, Count: 1, PeriodDay: day},
		4: {UserID: 4, Count: 1, Day: 1, Week: 1, PeriodDay: day},
	}
	if got := storeHoldings(t, s.Coupons, tpl.ID, at); !maps.Equal(got, want) {
		t.Errorf("Holdings at %s:\n got %v\nwant %v", at, got, want)
	}
	for u, h := range want {
		want[u] = quan.Holding{UserID: h.UserID, Count: h.Count}
	}
	if got := storeHoldings(t, s.Coupons, tpl.ID, time.Time{}); !maps.Equal(got, want) {
		t.Errorf("Holdings without an instant:\n got %v\nwant %v", got, want)
	}
}

// storeHoldings reads the holdings of template at at, by user.
func storeHoldings(t *testing.T, s quan.CouponStore, template int64, at time.Time) map[int64]quan.Holding {
	t.Helper()
	out := map[int64]quan.Holding{}
	for h, err := range s.Holdings(t.Context(), template, at) {
		if err != nil {
			t.Fatalf("Holdings(%d, %s): %v", template, at, err)
		}
		out[h.UserID] = h
	}
	return out
}

// orderSystem is the order system's key, which settles orders.
var orderSystem = quan.Identity{Subject: "orders", Role: quan.RoleService, KeyID: 1, Scopes: quan.NewScopeSet(quan.ScopeSettlement)}
