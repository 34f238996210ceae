package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/events"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/wallet"
)

// walletCoupon distributes one coupon of a fresh 满100减10 template of
// shop 1 (valid 72 h from receipt) to user and returns it.
func (ts *testServer) walletCoupon(t *testing.T, user int64) quan.Coupon {
	t.Helper()
	return ts.shopCoupon(t, 1, user)
}

// shopCoupon is walletCoupon of a template of shop.
func (ts *testServer) shopCoupon(t *testing.T, shop, user int64) quan.Coupon {
	t.Helper()
	m := ts.merchant(t, shop)
	tpl := ts.activeTemplate(t, m, 100, 1)
	task := ts.distribute(t, m, tpl.ID, "users.csv", []byte(fmt.Sprintf("userId\n%d\n", user)), nil)
	if task.Counts.Issued != 1 {
		t.Fatalf("distribution: %+v", task.Counts)
	}
	var page struct{ Items []quan.Coupon }
	ts.do(t, "GET", "/api/v1/me/coupons?status=available", ts.user(t, user), nil).decode(t, &page)
	for _, c := range page.Items {
		if c.TemplateID == tpl.ID {
			return c
		}
	}
	t.Fatalf("user %d does not see the coupon of template %d", user, tpl.ID)
	return quan.Coupon{}
}

// order is an order of one item of shop 1 worth amount fen.
func order(amount int64) []map[string]any {
	return []map[string]any{{"sku": "shoe", "category": "wear", "shopNo": 1, "unitPrice": amount, "quantity": 1}}
}

func TestWalletListsCouponsAsTheyStand(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	c := ts.walletCoupon(t, 7)
	if c.Status != quan.CouponAvailable || !c.ValidEnd.Equal(testNow.Add(72*time.Hour)) {
		t.Fatalf("coupon %+v", c)
	}
	ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", c.ID), u, nil).want(t, http.StatusOK, "")
	ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", c.ID), ts.user(t, 8), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", "/api/v1/me/coupons", ts.merchant(t, 1), nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "GET", "/api/v1/me/coupons?status=lost", u, nil).want(t, http.StatusBadRequest, quan.EINVALID)
	for q, field := range map[string]string{"limit=x": "limit", "offset=-1": "offset", "limit=101": "limit"} {
		if r := ts.do(t, "GET", "/api/v1/me/coupons?"+q, u, nil); r.Status != http.StatusBadRequest || !r.hasField(field) {
			t.Fatalf("?%s: %d %+v, want 400 naming %s", q, r.Status, r.Problem, field)
		}
	}

	// Once the window closes the coupon reads expired, sweeper or not.
	ts.setNow(c.ValidEnd)
	u = ts.user(t, 7) // a token of the new time
	var page struct {
		Items []quan.Coupon
		Total int
	}
	ts.do(t, "GET", "/api/v1/me/coupons?status=available", u, nil).decode(t, &page)
	if page.Total != 0 {
		t.Fatalf("an expired coupon listed available: %+v", page)
	}
	ts.do(t, "GET", "/api/v1/me/coupons?status=expired", u, nil).decode(t, &page)
	if page.Total != 1 || page.Items[0].ID != c.ID || page.Items[0].Status != quan.CouponExpired {
		t.Fatalf("expired coupons: %+v", page)
	}
}

func TestSettlement(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	c := ts.walletCoupon(t, 7)

	var q quan.Quote
	ts.do(t, "POST", "/api/v1/settlement/quote", u, map[string]any{"items": order(9999)}).decode(t, &q)
	if len(q.Coupons) != 1 || q.Coupons[0].Usable || q.Coupons[0].Reason != quan.ReasonThresholdNotMet {
		t.Fatalf("quote of 99.99: %+v, want the threshold not met", q)
	}
	ts.do(t, "POST", "/api/v1/settlement/quote", u, map[string]any{"items": order(12_000)}).decode(t, &q)
	if q.Best != c.ID || q.BestDiscount != 1000 || q.CombinationDiscount != 1000 || q.Payable != 11_000 {
		t.Fatalf("quote of 120.00: %+v", q)
	}
	ts.do(t, "POST", "/api/v1/settlement/quote", u, map[string]any{"items": []map[string]any{{"sku": ""}}}).
		want(t, http.StatusBadRequest, quan.EINVALID)

	lock := func(order, token string, discount int64) response {
		return ts.settle(t, token, "/api/v1/orders/"+order+"/lock", map[string]any{
			"items": orderItems(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": discount})
	}
	lock("o-1", u, 999).want(t, http.StatusConflict, quan.EPRICECHANGED)
	lock("o-1", u, 1000).want(t, http.StatusOK, "")
	lock("o-1", u, 1000).want(t, http.StatusOK, "") // again: idempotent
	lock("o-2", u, 1000).want(t, http.StatusConflict, quan.ECONFLICT)
	lock("o-3", ts.user(t, 8), 1000).want(t, http.StatusNotFound, quan.ENOTFOUND)

	step := func(order, name string) (response, []*quan.Coupon) {
		r := ts.settle(t, u, "/api/v1/orders/"+order+"/"+name, nil)
		var oc qhttp.OrderCoupons
		if r.Status == http.StatusOK {
			r.decode(t, &oc)
		}
		return r, oc.Coupons
	}
	r, cs := step("o-1", "redeem")
	r.want(t, http.StatusOK, "")
	if len(cs) != 1 || cs[0].Status != quan.CouponUsed {
		t.Fatalf("redeem: %+v", cs)
	}
	r, cs = step("o-1", "redeem") // paid twice: the same coupons
	r.want(t, http.StatusOK, "")
	if len(cs) != 1 || cs[0].Status != quan.CouponUsed {
		t.Fatalf("redeem again: %+v", cs)
	}
	r, _ = step("o-1", "release")
	r.want(t, http.StatusConflict, quan.ETRANSITION) // a paid order is refunded
	r, cs = step("o-1", "refund")
	r.want(t, http.StatusOK, "")
	if len(cs) != 1 || cs[0].Status != quan.CouponAvailable {
		t.Fatalf("refund: %+v", cs)
	}
	// A refund applies once: again is a conflict that says so, and the
	// refunded order is locked and paid no more.
	r, _ = step("o-1", "refund")
	r.want(t, http.StatusConflict, quan.EREFUNDED)
	lock("o-1", u, 1000).want(t, http.StatusConflict, quan.EREFUNDED)
	r, _ = step("o-1", "redeem")
	r.want(t, http.StatusConflict, quan.EREFUNDED)
	step("never-locked", "redeem")
	r, _ = step("never-locked", "redeem")
	r.want(t, http.StatusConflict, quan.ETRANSITION)

	// Cancel: released, and another order may take the coupon.
	lock("o-4", u, 1000).want(t, http.StatusOK, "")
	r, cs = step("o-4", "release")
	r.want(t, http.StatusOK, "")
	if len(cs) != 1 || cs[0].Status != quan.CouponAvailable {
		t.Fatalf("release: %+v", cs)
	}
	lock("o-5", u, 1000).want(t, http.StatusOK, "")
}

func orderItems(amount int64) []map[string]any { return order(amount) }

// TestLockAgainWithAnotherRequest: an order locked once is locked by that
// request: the same items and coupons again answer the first lock, and
// other items or coupons are 409 conflict, changing nothing, until the
// order is released.
func TestLockAgainWithAnotherRequest(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	a, b := ts.shopCoupon(t, 1, 7), ts.shopCoupon(t, 2, 7)
	items := []map[string]any{
		{"sku": "shoe", "category": "wear", "shopNo": 1, "unitPrice": 12_000, "quantity": 1},
		{"sku": "hat", "category": "wear", "shopNo": 2, "unitPrice": 12_000, "quantity": 1},
	}
	lock := func(items []map[string]any, discount int64, ids ...int64) response {
		return ts.settle(t, u, "/api/v1/orders/o-1/lock", map[string]any{"items": items, "couponIds": ids, "expectedDiscount": discount})
	}
	held := func() []int64 {
		var page struct{ Items []quan.Coupon }
		ts.do(t, "GET", "/api/v1/me/coupons?status=locked", u, nil).decode(t, &page)
		var ids []int64
		for _, c := range page.Items {
			if c.OrderID == "o-1" {
				ids = append(ids, c.ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	var first qhttp.OrderCoupons
	r := lock(items, 1000, a.ID)
	r.want(t, http.StatusOK, "")
	r.decode(t, &first)

	ts.setNow(testNow.Add(time.Minute))
	u = ts.user(t, 7) // a token of the new time
	var again qhttp.OrderCoupons
	r = lock(items, 1000, a.ID, a.ID) // the same coupons, named twice
	r.want(t, http.StatusOK, "")
	r.decode(t, &again)
	if len(again.Coupons) != 1 || again.Coupons[0].ID != a.ID || !again.Coupons[0].LockedUntil.Equal(first.Coupons[0].LockedUntil) ||
		!again.Coupons[0].UpdatedAt.Equal(first.Coupons[0].UpdatedAt) {
		t.Fatalf("the same lock again: %+v; want the first lock %+v", again.Coupons, first.Coupons)
	}
	lock(items, 999, a.ID).want(t, http.StatusConflict, quan.EPRICECHANGED)

	for _, tc := range []struct {
		name     string
		items    []map[string]any
		discount int64
		ids      []int64
	}{
		{"OtherItems", items[:1], 1000, []int64{a.ID}},
		{"MoreCoupons", items, 2000, []int64{a.ID, b.ID}},
		{"OtherCoupons", items, 1000, []int64{b.ID}},
	} {
		r := lock(tc.items, tc.discount, tc.ids...)
		r.want(t, http.StatusConflict, quan.ECONFLICT)
		if !strings.Contains(r.Problem.Detail, "locked already") {
			t.Errorf("%s: %q, want it to say the order is locked already", tc.name, r.Problem.Detail)
		}
		if got := held(); !slices.Equal(got, []int64{a.ID}) {
			t.Fatalf("%s: the order holds %v, want only %d", tc.name, got, a.ID)
		}
	}

	ts.settle(t, u, "/api/v1/orders/o-1/release", nil).want(t, http.StatusOK, "")
	lock(items, 2000, a.ID, b.ID).want(t, http.StatusOK, "")
	if got, want := held(), []int64{min(a.ID, b.ID), max(a.ID, b.ID)}; !slices.Equal(got, want) {
		t.Fatalf("after the release the order holds %v, want %v", got, want)
	}
}

// TestLockRunsOut moves the clock past the lock's TTL: the coupon is
// available again by itself, the order can no longer pay with it, and
// another order may lock it.
func TestLockRunsOut(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	c := ts.walletCoupon(t, 7)
	body := map[string]any{"items": order(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	ts.settle(t, u, "/api/v1/orders/o-1/lock", body).want(t, http.StatusOK, "")
	var got quan.Coupon
	ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", c.ID), u, nil).decode(t, &got)
	if got.Status != quan.CouponLocked || !got.LockedUntil.Equal(testNow.Add(wallet.DefaultLockTTL)) {
		t.Fatalf("locked coupon %+v", got)
	}
	ts.setNow(testNow.Add(wallet.DefaultLockTTL))
	got = quan.Coupon{}
	ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", c.ID), u, nil).decode(t, &got)
	if got.Status != quan.CouponAvailable || got.OrderID != "" {
		t.Fatalf("after the lock ran out: %+v, want available", got)
	}
	ts.settle(t, u, "/api/v1/orders/o-1/redeem", nil).want(t, http.StatusConflict, quan.ETRANSITION)
	ts.settle(t, u, "/api/v1/orders/o-2/lock", body).want(t, http.StatusOK, "")
}

// TestRefundOfAnExpiredCoupon: a refund after the coupon's window closed
// leaves it expired, never available.
func TestRefundOfAnExpiredCoupon(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	c := ts.walletCoupon(t, 7)
	body := map[string]any{"items": order(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	ts.settle(t, u, "/api/v1/orders/o-1/lock", body).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/o-1/redeem", nil).want(t, http.StatusOK, "")
	ts.setNow(c.ValidEnd.Add(time.Hour))
	u = ts.user(t, 7) // a token of the new time
	r := ts.settle(t, u, "/api/v1/orders/o-1/refund", nil)
	r.want(t, http.StatusOK, "")
	var oc qhttp.OrderCoupons
	r.decode(t, &oc)
	if len(oc.Coupons) != 1 || oc.Coupons[0].Status != quan.CouponExpired {
		t.Fatalf("refund after the window: %+v, want expired", oc.Coupons)
	}
	// An expired coupon cannot be locked.
	ts.settle(t, u, "/api/v1/orders/o-2/lock", body).want(t, http.StatusConflict, quan.ENOTUSABLE)
}

func TestDoubleLockOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	c := ts.walletCoupon(t, 7)
	body := map[string]any{"items": order(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	var wg sync.WaitGroup
	statuses := make([]int, 10)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = ts.settle(t, u, fmt.Sprintf("/api/v1/orders/race-%d/lock", i), body).Status
		})
	}
	wg.Wait()
	won := 0
	for _, s := range statuses {
		switch s {
		case http.StatusOK:
			won++
		case http.StatusConflict:
		default:
			t.Errorf("a racing lock got %d", s)
		}
	}
	if won != 1 {
		t.Fatalf("%d of 10 racing orders locked the coupon, want 1", won)
	}
}

// eventLog consumes coupon.status_changed as a downstream system would,
// keeping every message's events.
type eventLog struct {
	mu       sync.Mutex
	messages [][]quan.CouponEvent
}

func consumeEvents(t *testing.T, bus quan.Bus) *eventLog {
	t.Helper()
	l := &eventLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		bus.Consume(ctx, quan.CouponEventSubject, "test-events", quan.ConsumeOptions{}, func(_ context.Context, m quan.Message) error {
			es, err := quan.DecodeCouponEvents(m.Data)
			if err != nil {
				t.Errorf("message %s: %v", m.ID, err)
				return nil
			}
			l.mu.Lock()
			l.messages = append(l.messages, es)
			l.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l
}

// wait waits up to 10 s for n events and returns the messages so far.
func (l *eventLog) wait(n int) [][]quan.CouponEvent {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		got := 0
		for _, m := range l.messages {
			got += len(m)
		}
		ms := slices.Clone(l.messages)
		l.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			return ms
		}
	}
}

// relayAll relays every event of ts's outbox to its claim bus, as the
// relay of a serving process does, and returns how many.
func relayAll(t *testing.T, ts *testServer) int {
	t.Helper()
	r := &events.Relay{Store: ts.store, Bus: ts.claims.Bus, Owner: "test-relay", Now: ts.clock}
	total := 0
	for {
		n, err := r.RelayOnce(t.Context())
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// TestCouponEvents consumes coupon.status_changed as a downstream system
// would: the issue, a lock, a payment, a refund and an expiry by the
// sweeper each publish one event, recorded with the change and relayed
// from the outbox, with its id and type.
func TestCouponEvents(t *testing.T) {
	ts := newClaimServer(t, nil)
	log := consumeEvents(t, ts.claims.Bus)

	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 10, 1)
	u := ts.user(t, 7)
	cl := ts.claimed(t, u, tpl.ID)
	body := map[string]any{"items": order(12_000), "couponIds": []int64{cl.CouponID}, "expectedDiscount": 1000}
	relayAll(t, ts)
	ts.settle(t, u, "/api/v1/orders/o-1/lock", body).want(t, http.StatusOK, "")
	relayAll(t, ts)
	ts.settle(t, u, "/api/v1/orders/o-1/redeem", nil).want(t, http.StatusOK, "")
	relayAll(t, ts)
	ts.settle(t, u, "/api/v1/orders/o-1/refund", nil).want(t, http.StatusOK, "")
	relayAll(t, ts)
	ts.setNow(testNow.Add(73 * time.Hour))
	if n, err := ts.api.Wallet.Sweep(t.Context(), 100); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want the one coupon expired", n, err)
	}
	relayAll(t, ts)
	want := [][2]quan.CouponStatus{
		{"", quan.CouponAvailable},
		{quan.CouponAvailable, quan.CouponLocked}, {quan.CouponLocked, quan.CouponUsed},
		{quan.CouponUsed, quan.CouponAvailable}, {quan.CouponAvailable, quan.CouponExpired},
	}
	types := []quan.EventType{quan.EventCouponIssued, quan.EventCouponLocked, quan.EventCouponRedeemed, quan.EventCouponRefunded, quan.EventCouponExpired}
	ms := log.wait(len(want))
	var events []quan.CouponEvent
	for _, m := range ms {
		if len(m) != 1 {
			t.Errorf("a message of %d events: %+v; want one change in each", len(m), m)
		}
		events = append(events, m...)
	}
	if len(events) != len(want) {
		t.Fatalf("%d events: %+v; want %d", len(events), events, len(want))
	}
	for i, e := range events {
		if e.Coupon != cl.CouponID || e.User != 7 || e.Template != tpl.ID || e.Old != want[i][0] || e.New != want[i][1] || e.At.IsZero() || e.Type != types[i] || e.ID == "" {
			t.Errorf("event %d: %+v, want %s -> %s of coupon %d", i, e, want[i][0], want[i][1], cl.CouponID)
		}
	}
}

// TestSweepEventsInMessagesOfAThousand: a sweep's events go out in
// messages of up to quan.MaxEventsPerMessage, each change once.
func TestSweepEventsInMessagesOfAThousand(t *testing.T) {
	ts := newClaimServer(t, nil)
	log := consumeEvents(t, ts.claims.Bus)
	m := ts.merchant(t, 1)
	const n = 2500
	tpl := ts.activeTemplate(t, m, n, 1)
	for first := 0; first < n; first += 1000 { // the test server takes files of up to 1,000 rows
		var file strings.Builder
		file.WriteString("userId\n")
		for u := first; u < min(first+1000, n); u++ {
			fmt.Fprintf(&file, "%d\n", 1000+u)
		}
		if task := ts.distribute(t, m, tpl.ID, "users.csv", []byte(file.String()), nil); task.Counts.Issued != int64(min(1000, n-first)) {
			t.Fatalf("distribution: %+v", task.Task)
		}
	}
	// The coupons issued, the template's activation and the three tasks'
	// ends.
	if got := relayAll(t, ts); got != n+1+3 {
		t.Fatalf("relayed %d events, want %d", got, n+4)
	}
	ts.setNow(testNow.Add(73 * time.Hour))
	if got, err := ts.api.Wallet.Sweep(t.Context(), 5000); err != nil || got != n {
		t.Fatalf("Sweep = %d, %v; want %d", got, err, n)
	}
	relayAll(t, ts)
	ms := log.wait(2 * n)
	var sizes []int
	seen := map[int64]bool{}
	for _, m := range ms {
		if m[0].Type == quan.EventCouponIssued {
			continue
		}
		sizes = append(sizes, len(m))
		for _, e := range m {
			if seen[e.Coupon] || e.Template != tpl.ID || e.Old != quan.CouponAvailable || e.New != quan.CouponExpired {
				t.Fatalf("event %+v: want each coupon of template %d once, available -> expired", e, tpl.ID)
			}
			seen[e.Coupon] = true
		}
	}
	if !slices.Equal(sizes, []int{1000, 1000, 500}) {
		t.Fatalf("messages of %v events, want [1000 1000 500]", sizes)
	}
}

// TestDecodeCouponEvents reads an array, and refuses what is not one (a
// single event object included).
func TestDecodeCouponEvents(t *testing.T) {
	es, err := quan.DecodeCouponEvents([]byte(`[{"coupon":1,"new":"used"},{"coupon":2,"new":"expired"}]`))
	if err != nil || len(es) != 2 || es[1].Coupon != 2 || es[1].New != quan.CouponExpired {
		t.Fatalf("an array: %+v, %v", es, err)
	}
	for _, bad := range []string{`"x"`, ` {"coupon":3,"new":"locked"}`} {
		if _, err := quan.DecodeCouponEvents([]byte(bad)); !errors.Is(err, quan.ErrInvalid) {
			t.Errorf("DecodeCouponEvents(%s): %v, want ErrInvalid", bad, err)
		}
	}
}

// TestTemplatesEndByThemselves: once a template's issue window closes, the
// sweep ends it, as the system, in its audit trail.
func TestTemplatesEndByThemselves(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	short := validTemplate()
	short["issueEnd"] = testNow.Add(time.Hour).Format(time.RFC3339)
	tpl := ts.create(t, m, short)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	open := ts.activeTemplate(t, m, 10, 1)
	if n, err := ts.api.Templates.EndDue(t.Context()); err != nil || n != 0 {
		t.Fatalf("EndDue inside the window = %d, %v", n, err)
	}
	ts.setNow(testNow.Add(time.Hour))
	m = ts.merchant(t, 1)
	if n, err := ts.api.Templates.EndDue(t.Context()); err != nil || n != 1 {
		t.Fatalf("EndDue after the window = %d, %v; want 1", n, err)
	}
	var got quan.Template
	ts.do(t, "GET", loc(tpl.ID), m, nil).decode(t, &got)
	if got.Status != quan.TemplateEnded {
		t.Fatalf("template after its window: %s, want ended", got.Status)
	}
	ts.do(t, "GET", loc(open.ID), m, nil).decode(t, &got)
	if got.Status != quan.TemplateActive {
		t.Fatalf("a template still in its window: %s", got.Status)
	}
	var history struct{ Items []quan.AuditEntry }
	ts.do(t, "GET", loc(tpl.ID)+"/history", m, nil).decode(t, &history)
	if last := history.Items[len(history.Items)-1]; last.Action != quan.ActionExpire || last.Actor != "admin:system" {
		t.Fatalf("last audit entry %+v, want an expire by the system", last)
	}
}

// TestArchiveAfter: spent coupons of an ended template leave the wallet
// for the history table once old enough.
func TestArchiveAfter(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	c := ts.walletCoupon(t, 7)
	body := map[string]any{"items": order(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	ts.settle(t, u, "/api/v1/orders/o-1/lock", body).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/o-1/redeem", nil).want(t, http.StatusOK, "")
	// A newer coupon, so that SQLite keeps its largest id in use.
	ts.walletCoupon(t, 8)
	ts.do(t, "POST", loc(c.TemplateID)+"/terminate", ts.merchant(t, 1), nil).want(t, http.StatusOK, "")
	if n, err := ts.api.Wallet.Archive(t.Context(), 0, 100); err != nil || n != 0 {
		t.Fatalf("archiving off: %d, %v", n, err)
	}
	ts.setNow(testNow.Add(31 * 24 * time.Hour))
	if n, err := ts.api.Wallet.Archive(t.Context(), 30*24*time.Hour, 100); err != nil || n != 1 {
		t.Fatalf("Archive = %d, %v; want the used coupon", n, err)
	}
	var page struct{ Total int }
	ts.do(t, "GET", "/api/v1/me/coupons", ts.user(t, 7), nil).decode(t, &page)
	if page.Total != 0 {
		t.Fatalf("the wallet still lists %d coupons", page.Total)
	}
}

// TestLockRefusesCouponsThatDoNotStack: two coupons of one shop do not
// stack: the quote combines one of them, and a lock naming both is 409
// not_usable, whatever the discount expected.
func TestLockRefusesCouponsThatDoNotStack(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	a, b := ts.walletCoupon(t, 7), ts.walletCoupon(t, 7)
	var q quan.Quote
	ts.do(t, "POST", "/api/v1/settlement/quote", u, map[string]any{"items": order(12_000)}).decode(t, &q)
	if !slices.Equal(q.Combination, []int64{min(a.ID, b.ID)}) || q.CombinationDiscount != 1000 {
		t.Fatalf("quote: combination %v off %d; want the one coupon %d off 1000", q.Combination, q.CombinationDiscount, min(a.ID, b.ID))
	}
	for _, discount := range []int64{1000, 2000} {
		r := ts.settle(t, u, "/api/v1/orders/o-1/lock", map[string]any{
			"items": order(12_000), "couponIds": []int64{a.ID, b.ID}, "expectedDiscount": discount})
		r.want(t, http.StatusConflict, quan.ENOTUSABLE)
		if !strings.Contains(r.Problem.Detail, "do not stack") {
			t.Errorf("lock of both, %d expected: %q, want it to say they do not stack", discount, r.Problem.Detail)
		}
	}
}

// stackCoupon distributes to user one coupon of a fresh active template
// that body, a validTemplate patched, describes, made with token.
func (ts *testServer) stackCoupon(t *testing.T, token string, user int64, patch map[string]any) quan.Coupon {
	t.Helper()
	body := validTemplate()
	for k, v := range patch {
		body[k] = v
	}
	tpl := ts.create(t, token, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", token, nil).want(t, http.StatusOK, "")
	task := ts.distribute(t, token, tpl.ID, "users.csv", []byte(fmt.Sprintf("userId\n%d\n", user)), nil)
	if task.Counts.Issued != 1 {
		t.Fatalf("distribution: %+v", task.Counts)
	}
	var page struct{ Items []quan.Coupon }
	ts.do(t, "GET", "/api/v1/me/coupons?status=available", ts.user(t, user), nil).decode(t, &page)
	for _, c := range page.Items {
		if c.TemplateID == tpl.ID {
			return c
		}
	}
	t.Fatalf("user %d does not see the coupon of template %d", user, tpl.ID)
	return quan.Coupon{}
}

// TestLockRefusesStackingPolicies: a lock naming coupons whose templates'
// stacking forbids them together is 409 not_usable, saying which policy,
// whatever the discount expected; the quote never combines them, and the
// coupons stay available.
func TestLockRefusesStackingPolicies(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	// 120.00 at shop 1 and 120.00 at shop 2.
	items := []map[string]any{
		{"sku": "shoe", "category": "wear", "shopNo": 1, "unitPrice": 12_000, "quantity": 1},
		{"sku": "tea", "category": "drink", "shopNo": 2, "unitPrice": 12_000, "quantity": 1},
	}
	exclusive := ts.stackCoupon(t, ts.merchant(t, 1), 7, map[string]any{"stacking": "exclusive"})                     // 满100减10 at shop 1
	shop2 := ts.stackCoupon(t, ts.merchant(t, 2), 7, map[string]any{"stacking": "withShop"})                          // 满100减10 at shop 2
	platform := ts.stackCoupon(t, admin, 7, map[string]any{"source": "platform", "shopNo": 1, "stacking": "withShop", // 立减 5
		"kind": "direct", "rule": map[string]any{"amount": 500}})

	var q quan.Quote
	ts.do(t, "POST", "/api/v1/settlement/quote", u, map[string]any{"items": items}).decode(t, &q)
	// No two of the three stack: the best is one coupon of 10 off, the
	// first by id of the two (equal priority).
	if want := min(exclusive.ID, shop2.ID); !slices.Equal(q.Combination, []int64{want}) || q.CombinationDiscount != 1000 {
		t.Fatalf("quote: combination %v off %d; want [%d] off 1000", q.Combination, q.CombinationDiscount, want)
	}
	for _, c := range q.Coupons {
		if c.CouponID == exclusive.ID && c.Stacking != quan.StackExclusive {
			t.Errorf("quote of coupon %d: stacking %q, want exclusive", c.CouponID, c.Stacking)
		}
	}
	for _, tc := range []struct {
		name     string
		ids      []int64
		discount int64
		says     string
	}{
		{"ExclusiveWithShop", []int64{exclusive.ID, shop2.ID}, 2000, fmt.Sprintf("coupon %d is exclusive", exclusive.ID)},
		{"ExclusiveWithPlatform", []int64{platform.ID, exclusive.ID}, 1500, fmt.Sprintf("coupon %d is exclusive", exclusive.ID)},
		{"WithShopMeetsPlatform", []int64{shop2.ID, platform.ID}, 1500,
			fmt.Sprintf("coupon %d stacks only with shop-funded coupons, and coupon %d is platform-funded", shop2.ID, platform.ID)},
		{"All", []int64{exclusive.ID, shop2.ID, platform.ID}, 2500, "do not stack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, discount := range []int64{tc.discount, 1000} {
				r := ts.settle(t, u, "/api/v1/orders/o-1/lock", map[string]any{
					"items": items, "couponIds": tc.ids, "expectedDiscount": discount})
				r.want(t, http.StatusConflict, quan.ENOTUSABLE)
				if !strings.Contains(r.Problem.Detail, tc.says) {
					t.Errorf("lock of %v, %d expected: %q, want it to say %q", tc.ids, discount, r.Problem.Detail, tc.says)
				}
			}
		})
	}
	var page struct{ Total int }
	ts.do(t, "GET", "/api/v1/me/coupons?status=available", u, nil).decode(t, &page)
	if page.Total != 3 {
		t.Fatalf("%d coupons available after the refused locks, want 3", page.Total)
	}
	// Each alone locks; so does the platform coupon (withShop) with a
	// shop coupon that is withPlatform.
	ts.settle(t, u, "/api/v1/orders/o-2/lock", map[string]any{
		"items": items, "couponIds": []int64{exclusive.ID}, "expectedDiscount": 1000}).want(t, http.StatusOK, "")
	pair := ts.stackCoupon(t, ts.merchant(t, 2), 7, map[string]any{"stacking": "withPlatform"})
	ts.settle(t, u, "/api/v1/orders/o-3/lock", map[string]any{
		"items": items, "couponIds": []int64{platform.ID, pair.ID}, "expectedDiscount": 1500}).want(t, http.StatusOK, "")
}

// TestLockSharesByPriority: when two coupons together take more than the
// order costs, the one of higher priority keeps its whole discount and
// the other the rest, whatever their ids; the quote lists them in that
// order.
func TestLockSharesByPriority(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	direct := map[string]any{"kind": "direct", "rule": map[string]any{"amount": 1000}}
	platform := ts.stackCoupon(t, admin, 7, map[string]any{"source": "platform", "shopNo": 1, "kind": direct["kind"], "rule": direct["rule"]})
	shop := ts.stackCoupon(t, ts.merchant(t, 1), 7, map[string]any{"kind": direct["kind"], "rule": direct["rule"], "priority": 5})
	if platform.ID > shop.ID {
		t.Fatalf("the test wants the platform coupon's id lower: %d, %d", platform.ID, shop.ID)
	}
	var q quan.Quote
	ts.do(t, "POST", "/api/v1/settlement/quote", u, map[string]any{"items": order(1500)}).decode(t, &q)
	if !slices.Equal(q.Combination, []int64{shop.ID, platform.ID}) || q.CombinationDiscount != 1500 {
		t.Fatalf("quote: combination %v off %d; want [%d %d] off 1500", q.Combination, q.CombinationDiscount, shop.ID, platform.ID)
	}
	r := ts.settle(t, u, "/api/v1/orders/o-1/lock", map[string]any{
		"items": order(1500), "couponIds": []int64{platform.ID, shop.ID}, "expectedDiscount": 1500})
	r.want(t, http.StatusOK, "")
	var locked struct{ Coupons []quan.Coupon }
	r.decode(t, &locked)
	shares := map[int64]int64{}
	for _, c := range locked.Coupons {
		shares[c.ID] = c.Discount
	}
	if shares[shop.ID] != 1000 || shares[platform.ID] != 500 {
		t.Fatalf("shares %v: want the shop coupon (priority 5) 1000, the platform's 500", shares)
	}
}

// TestWalletPagesWithoutAFilter: with no status the store reads only the
// page; the pages still add up to the user's coupons, newest first, each
// as it stands at now, and the total counts them all, never another
// user's.
func TestWalletPagesWithoutAFilter(t *testing.T) {
	ts := newTestServer(t)
	var want []int64 // newest first
	for range 5 {
		want = append([]int64{ts.walletCoupon(t, 7).ID}, want...)
	}
	other := ts.walletCoupon(t, 8)
	ts.setNow(testNow.Add(72 * time.Hour)) // every coupon's window closed
	u := ts.user(t, 7)

	type page struct {
		Items []quan.Coupon
		Total int
	}
	var got []int64
	for offset := 0; offset < 7; offset += 2 {
		var p page
		ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons?limit=2&offset=%d", offset), u, nil).decode(t, &p)
		if p.Total != 5 {
			t.Fatalf("offset %d: total %d, want 5", offset, p.Total)
		}
		if len(p.Items) != min(2, max(0, 5-offset)) {
			t.Fatalf("offset %d: %d items, want %d", offset, len(p.Items), min(2, max(0, 5-offset)))
		}
		for _, c := range p.Items {
			if c.Status != quan.CouponExpired || c.UserID != 7 {
				t.Errorf("offset %d: coupon %d of user %d is %s, want expired of user 7", offset, c.ID, c.UserID, c.Status)
			}
			got = append(got, c.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages of user 7: %v, want %v (newest first)", got, want)
	}
	var p page
	ts.do(t, "GET", "/api/v1/me/coupons", ts.user(t, 8), nil).decode(t, &p)
	if p.Total != 1 || len(p.Items) != 1 || p.Items[0].ID != other.ID {
		t.Errorf("user 8's wallet: %+v, want only coupon %d", p, other.ID)
	}
	ts.do(t, "GET", "/api/v1/me/coupons", ts.user(t, 9), nil).decode(t, &p)
	if p.Total != 0 || len(p.Items) != 0 {
		t.Errorf("user 9 holds nothing, but sees %+v", p)
	}
}
