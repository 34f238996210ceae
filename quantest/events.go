package quantest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// EventStores are the ports of one store whose changes record events,
// and its outbox.
type EventStores struct {
	WalletStores
	Events quan.EventStore
}

// TestEventStore runs the conformance suite of quan.EventStore: that
// every change the port's contract names records its event in its
// transaction, and that relays share the outbox.
func TestEventStore(t *testing.T, newStores func(t *testing.T) EventStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, EventStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Record/CouponLife", testCouponEvents)
	run("Record/SwapAndLapse", testSwapLapseEvents)
	run("Record/Chunk", testChunkEvents)
	run("Record/TaskAndTemplate", testTaskTemplateEvents)
	run("Take/LeasesAndFinish", testTakeEvents)
	run("Take/Stampede", testTakeStampede)
	run("Delete/Relayed", testDeleteEvents)
}

// allEvents returns every event of s after after, in order.
func allEvents(t *testing.T, s quan.EventStore, after int64) []*quan.Event {
	t.Helper()
	var out []*quan.Event
	for {
		es, err := s.Events(t.Context(), after, 100)
		if err != nil {
			t.Fatalf("Events(%d): %v", after, err)
		}
		out = append(out, es...)
		if len(es) < 100 {
			return out
		}
		after = es[len(es)-1].Seq
	}
}

// lastSeq is the Seq of the newest event of s, 0 if none.
func lastSeq(t *testing.T, s quan.EventStore) int64 {
	t.Helper()
	es := allEvents(t, s, 0)
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

// eventCoupon decodes the coupon of a coupon event.
func eventCoupon(t *testing.T, e *quan.Event) *quan.Coupon {
	t.Helper()
	var c quan.Coupon
	if err := json.Unmarshal(e.Data, &c); err != nil {
		t.Fatalf("event %s (%s): data %s: %v", e.ID(), e.Type, e.Data, err)
	}
	return &c
}

// eventSummary is "type:object:status" for each coupon event.
func eventSummary(t *testing.T, es []*quan.Event) []string {
	t.Helper()
	var out []string
	for _, e := range es {
		c := eventCoupon(t, e)
		if c.ID != e.ObjectID || c.UserID != e.UserID || c.ShopNo != e.ShopNo {
			t.Errorf("event %s names coupon %d of user %d, shop %d; its data %+v", e.ID(), e.ObjectID, e.UserID, e.ShopNo, c)
		}
		out = append(out, fmt.Sprintf("%s:%d:%s", e.Type, e.ObjectID, c.Status))
	}
	return out
}

func testCouponEvents(t *testing.T, s EventStores) {
	cs := walletCoupons(t, s.WalletStores, 1)
	c := cs[0]
	es := allEvents(t, s.Events, 0)
	if len(es) != 1 || es[0].Type != quan.EventCouponIssued {
		t.Fatalf("after a claim: %d events %v, want one coupon.issued", len(es), es)
	}
	got := eventCoupon(t, es[0])
	if got.Code != c.Code || got.Code == "" || got.Source != quan.FromClaim || got.TemplateID != c.TemplateID || !got.ValidEnd.Equal(c.ValidEnd) {
		t.Errorf("issued event's coupon %+v, want the coupon as read %+v", got, c)
	}
	if es[0].Seq <= 0 || es[0].ID() != fmt.Sprintf("evt_%d", es[0].Seq) {
		t.Errorf("event seq %d id %q", es[0].Seq, es[0].ID())
	}
	update := func(fn func(*quan.Coupon) error) error {
		t.Helper()
		_, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{c.ID}, func(x []*quan.Coupon) error { return fn(x[0]) })
		return err
	}
	steps := []func(*quan.Coupon) error{
		func(x *quan.Coupon) error { return x.Lock("order-1", walletNow, walletNow.Add(time.Hour)) },
		func(x *quan.Coupon) error { x.Release(walletNow.Add(time.Second)); return nil },
		func(x *quan.Coupon) error {
			return x.Lock("order-2", walletNow.Add(2*time.Second), walletNow.Add(time.Hour))
		},
		func(x *quan.Coupon) error { return x.Redeem(walletNow.Add(3 * time.Second)) },
		func(x *quan.Coupon) error { return x.Refund(walletNow.Add(4 * time.Second)) },
		func(x *quan.Coupon) error { return x.Revoke(walletNow.Add(5 * time.Second)) },
	}
	for i, step := range steps {
		if err := update(step); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// A change that fails records nothing, nor one that changes no status.
	if err := update(func(x *quan.Coupon) error { return errors.New("boom") }); err == nil {
		t.Fatal("a failing fn succeeded")
	}
	if err := update(func(*quan.Coupon) error { return nil }); err != nil {
		t.Fatal(err)
	}
	es = allEvents(t, s.Events, es[0].Seq)
	want := []string{
		fmt.Sprintf("coupon.locked:%d:locked", c.ID),
		fmt.Sprintf("coupon.released:%d:available", c.ID),
		fmt.Sprintf("coupon.locked:%d:locked", c.ID),
		fmt.Sprintf("coupon.redeemed:%d:used", c.ID),
		fmt.Sprintf("coupon.refunded:%d:available", c.ID),
		fmt.Sprintf("coupon.revoked:%d:revoked", c.ID),
	}
	if got := eventSummary(t, es); !slices.Equal(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	if redeemed := eventCoupon(t, es[3]); redeemed.OrderID != "order-2" || !es[3].CreatedAt.Equal(walletNow.Add(3*time.Second)) || es[3].Previous != quan.CouponLocked {
		t.Errorf("the redemption's event: order %q at %s, from %q", redeemed.OrderID, es[3].CreatedAt, es[3].Previous)
	}
	if es[4].Previous != quan.CouponUsed {
		t.Errorf("the refund's event from %q, want used", es[4].Previous)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Seq <= es[i-1].Seq {
			t.Errorf("seqs not ascending: %d after %d", es[i].Seq, es[i-1].Seq)
		}
	}
}

func testSwapLapseEvents(t *testing.T, s EventStores) {
	cs := walletCoupons(t, s.WalletStores, 1, 2, 3)
	after := lastSeq(t, s.Events)
	before := *cs[0]
	locked := *cs[0]
	if err := locked.Lock("order-s", walletNow, walletNow.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{&before}, []*quan.Coupon{&locked}); err != nil || !ok {
		t.Fatalf("SwapCoupons = %v, %v", ok, err)
	}
	// A swap that finds the coupon changed writes no event.
	if ok, err := s.Wallet.SwapCoupons(t.Context(), 1, []*quan.Coupon{&before}, []*quan.Coupon{&locked}); err != nil || ok {
		t.Fatalf("a stale SwapCoupons = %v, %v", ok, err)
	}
	// The lock runs out, then every coupon's window closes.
	if _, _, err := s.Wallet.LapseCoupons(t.Context(), walletNow.Add(time.Minute), 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Wallet.LapseCoupons(t.Context(), cs[0].ValidEnd.Add(time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	es := allEvents(t, s.Events, after)
	got := eventSummary(t, es)
	head := []string{
		fmt.Sprintf("coupon.locked:%d:locked", cs[0].ID),
		fmt.Sprintf("coupon.released:%d:available", cs[0].ID),
	}
	if len(got) != 5 || !slices.Equal(got[:2], head) {
		t.Fatalf("events %q, want %q then three coupon.expired", got, head)
	}
	var expired []string
	for _, c := range cs {
		expired = append(expired, fmt.Sprintf("coupon.expired:%d:expired", c.ID))
	}
	rest := slices.Sorted(slices.Values(got[2:]))
	if !slices.Equal(rest, slices.Sorted(slices.Values(expired))) {
		t.Fatalf("the sweep's events %q, want %q", rest, expired)
	}
	if c := eventCoupon(t, es[2]); c.Code == "" || c.ValidEnd.IsZero() {
		t.Errorf("a swept coupon's event lacks its code or window: %+v", c)
	}
}

func testChunkEvents(t *testing.T, s EventStores) {
	tpl := activeTemplate(t, s.TaskStores, "evented", 100, 1)
	task := runningTask(t, s.TaskStores, tpl, "evented")
	after := lastSeq(t, s.Events)
	var rows []quan.ChunkRow
	for u := int64(1); u <= 30; u++ {
		rows = append(rows, user(u, 100+u))
	}
	apply(t, s.TaskStores, chunk(task, 1, rows...), issued(30))
	// A chunk applied again is refused and records nothing.
	if _, err := s.Tasks.ApplyChunk(t.Context(), chunk(task, 1, rows...)); !errors.Is(err, quan.ErrChunkApplied) {
		t.Fatalf("a chunk again: %v", err)
	}
	es := allEvents(t, s.Events, after)
	if len(es) != 30 {
		t.Fatalf("%d events of a chunk of 30 issued", len(es))
	}
	users := map[int64]bool{}
	for _, e := range es {
		c := eventCoupon(t, e)
		held := coupons(t, s.TaskStores, e.UserID, tpl.ID)
		if e.Type != quan.EventCouponIssued || c.TaskID != task.ID || c.Status != quan.CouponAvailable || len(held) != 1 || held[0].Code != c.Code || held[0].ID != c.ID {
			t.Errorf("event %s %s of coupon %+v; the user holds %+v", e.ID(), e.Type, c, held)
		}
		users[e.UserID] = true
	}
	if len(users) != 30 {
		t.Errorf("events name %d users, want 30", len(users))
	}
}

func testTaskTemplateEvents(t *testing.T, s EventStores) {
	tpl := activeTemplate(t, s.TaskStores, "lived", 10, 1)
	task := runningTask(t, s.TaskStores, tpl, "lived")
	after := lastSeq(t, s.Events)
	end := func(tk *quan.Task) error {
		tk.Status, tk.FinishedAt, tk.UpdatedAt = quan.TaskSucceeded, chunkNow, chunkNow
		return nil
	}
	if _, err := s.Tasks.UpdateTask(t.Context(), quan.AnyShop, task.ID, end); err != nil {
		t.Fatal(err)
	}
	// A task ended before ends no more.
	if _, err := s.Tasks.UpdateTask(t.Context(), quan.AnyShop, task.ID, func(tk *quan.Task) error { tk.UpdatedAt = chunkNow.Add(time.Second); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Templates.UpdateTemplate(t.Context(), tpl.ShopNo, tpl.ID, "merchant:1", quan.ActionUpdate, func(x *quan.Template) error {
		x.Name, x.UpdatedAt = "renamed", chunkNow
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Templates.UpdateTemplate(t.Context(), tpl.ShopNo, tpl.ID, "merchant:1", quan.ActionUpdate, func(x *quan.Template) error {
		x.Status, x.UpdatedAt = quan.TemplatePaused, chunkNow.Add(time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	es := allEvents(t, s.Events, after)
	if len(es) != 2 || es[0].Type != quan.EventTaskFinished || es[1].Type != quan.EventTemplateStatusChanged {
		t.Fatalf("events %v, want task.finished and template.status_changed", es)
	}
	var gotTask quan.Task
	if err := json.Unmarshal(es[0].Data, &gotTask); err != nil || gotTask.ID != task.ID || gotTask.Status != quan.TaskSucceeded || es[0].ShopNo != task.ShopNo || es[0].ObjectID != task.ID {
		t.Errorf("task event %+v: %+v, %v", es[0], gotTask, err)
	}
	var gotTpl quan.Template
	if err := json.Unmarshal(es[1].Data, &gotTpl); err != nil || gotTpl.ID != tpl.ID || gotTpl.Status != quan.TemplatePaused || gotTpl.Name != "renamed" || !es[1].CreatedAt.Equal(chunkNow.Add(time.Minute)) {
		t.Errorf("template event %+v: %+v, %v", es[1], gotTpl, err)
	}
}

// threeEvents records three coupon events and returns them.
func threeEvents(t *testing.T, s EventStores) []*quan.Event {
	t.Helper()
	walletCoupons(t, s.WalletStores, 1, 2, 3)
	es := allEvents(t, s.Events, 0)
	if len(es) != 3 {
		t.Fatalf("%d events of three coupons issued", len(es))
	}
	return es
}

func seqsOf(es []*quan.Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func testTakeEvents(t *testing.T, s EventStores) {
	es := threeEvents(t, s)
	ctx := t.Context()
	now := walletNow
	if n, oldest, err := s.Events.PendingEvents(ctx); err != nil || n != 3 || !oldest.Equal(es[0].CreatedAt) {
		t.Fatalf("PendingEvents = %d, %s, %v; want 3, %s", n, oldest, err, es[0].CreatedAt)
	}
	if _, err := s.Events.TakeEvents(ctx, "", now, now.Add(time.Minute), 10); quan.ErrorCode(err) != quan.EINVALID {
		t.Fatalf("a take without an owner: %v", err)
	}
	a, err := s.Events.TakeEvents(ctx, "relay-a", now, now.Add(time.Minute), 2)
	if err != nil || !slices.Equal(seqsOf(a), seqsOf(es[:2])) || a[0].Attempts != 1 || len(a[0].Data) == 0 {
		t.Fatalf("relay-a took %v, %v; want the first two", seqsOf(a), err)
	}
	b, err := s.Events.TakeEvents(ctx, "relay-b", now, now.Add(time.Minute), 10)
	if err != nil || !slices.Equal(seqsOf(b), seqsOf(es[2:])) {
		t.Fatalf("relay-b took %v, %v; want the third alone", seqsOf(b), err)
	}
	// Another relay cannot finish what a relay holds.
	if n, err := s.Events.FinishEvents(ctx, "relay-b", now, seqsOf(a)); err != nil || n != 0 {
		t.Fatalf("relay-b finished relay-a's: %d, %v", n, err)
	}
	if n, err := s.Events.FinishEvents(ctx, "relay-a", now, seqsOf(a)); err != nil || n != 2 {
		t.Fatalf("FinishEvents = %d, %v", n, err)
	}
	// Finishing twice marks nothing more.
	if n, err := s.Events.FinishEvents(ctx, "relay-a", now, seqsOf(a)); err != nil || n != 0 {
		t.Fatalf("FinishEvents again = %d, %v", n, err)
	}
	if n, _, err := s.Events.PendingEvents(ctx); err != nil || n != 1 {
		t.Fatalf("PendingEvents after two relayed = %d, %v", n, err)
	}
	// relay-b died: once its lease runs out relay-c takes the event again.
	if got, err := s.Events.TakeEvents(ctx, "relay-c", now.Add(30*time.Second), now.Add(2*time.Minute), 10); err != nil || len(got) != 0 {
		t.Fatalf("a take inside relay-b's lease: %v, %v", seqsOf(got), err)
	}
	c, err := s.Events.TakeEvents(ctx, "relay-c", now.Add(time.Minute), now.Add(2*time.Minute), 10)
	if err != nil || !slices.Equal(seqsOf(c), seqsOf(es[2:])) || c[0].Attempts != 2 {
		t.Fatalf("relay-c took %v, %v after relay-b's lease", seqsOf(c), err)
	}
	if n, err := s.Events.FinishEvents(ctx, "relay-b", now, seqsOf(b)); err != nil || n != 0 {
		t.Fatalf("relay-b finished after losing its lease: %d, %v", n, err)
	}
	if n, err := s.Events.FinishEvents(ctx, "relay-c", now, seqsOf(c)); err != nil || n != 1 {
		t.Fatalf("relay-c finished %d, %v", n, err)
	}
	if n, oldest, err := s.Events.PendingEvents(ctx); err != nil || n != 0 || !oldest.IsZero() {
		t.Fatalf("PendingEvents when all are relayed = %d, %s, %v", n, oldest, err)
	}
	if got, err := s.Events.TakeEvents(ctx, "relay-a", now.Add(time.Hour), now.Add(2*time.Hour), 10); err != nil || len(got) != 0 {
		t.Fatalf("relayed events taken again: %v, %v", seqsOf(got), err)
	}
	if got := allEvents(t, s.Events, 0); len(got) != 3 {
		t.Fatalf("Events lists %d after relaying, want 3", len(got))
	}
}

func testTakeStampede(t *testing.T, s EventStores) {
	tpl := activeTemplate(t, s.TaskStores, "stampede", 1000, 1)
	task := runningTask(t, s.TaskStores, tpl, "stampede")
	var rows []quan.ChunkRow
	for u := int64(1); u <= 200; u++ {
		rows = append(rows, user(u, u))
	}
	apply(t, s.TaskStores, chunk(task, 1, rows...), issued(200))
	var (
		mu    sync.Mutex
		taken = map[int64]string{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for r := range 8 {
		owner := fmt.Sprintf("relay-%d", r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				es, err := s.Events.TakeEvents(t.Context(), owner, walletNow, walletNow.Add(time.Hour), 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(es) == 0 {
					return
				}
				mu.Lock()
				for _, e := range es {
					if other, ok := taken[e.Seq]; ok {
						t.Errorf("event %d taken by %s and %s", e.Seq, other, owner)
					}
					taken[e.Seq] = owner
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(taken) != 200 {
		t.Fatalf("%d events taken of 200", len(taken))
	}
}

func testDeleteEvents(t *testing.T, s EventStores) {
	es := threeEvents(t, s)
	ctx := t.Context()
	got, err := s.Events.TakeEvents(ctx, "relay-a", walletNow, walletNow.Add(time.Minute), 2)
	if err != nil || len(got) != 2 {
		t.Fatal(seqsOf(got), err)
	}
	if _, err := s.Events.FinishEvents(ctx, "relay-a", walletNow, seqsOf(got)); err != nil {
		t.Fatal(err)
	}
	// Only relayed events go, and only those relayed before.
	if n, err := s.Events.DeleteEvents(ctx, walletNow, 10); err != nil || n != 0 {
		t.Fatalf("DeleteEvents before they were relayed: %d, %v", n, err)
	}
	if n, err := s.Events.DeleteEvents(ctx, walletNow.Add(time.Second), 1); err != nil || n != 1 {
		t.Fatalf("DeleteEvents limit 1: %d, %v", n, err)
	}
	if n, err := s.Events.DeleteEvents(ctx, walletNow.Add(time.Second), 10); err != nil || n != 1 {
		t.Fatalf("DeleteEvents: %d, %v", n, err)
	}
	left := allEvents(t, s.Events, 0)
	if len(left) != 1 || left[0].Seq != es[2].Seq {
		t.Fatalf("left %v, want the event not relayed", seqsOf(left))
	}
}
