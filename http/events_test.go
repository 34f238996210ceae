package http_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/events"
	"github.com/quanhq/quan/internal/testrig"
)

// points is the seed's points service: it awards 100 points for each
// coupon.redeemed it hears of on the bus, once per event id, whatever
// the bus delivers twice.
type points struct {
	mu      sync.Mutex
	seen    map[string]bool
	awarded map[int64]int // user → points
	dupes   int
}

func (p *points) handle(_ context.Context, m quan.Message) error {
	es, err := quan.DecodeCouponEvents(m.Data)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range es {
		if e.Type != quan.EventCouponRedeemed {
			continue
		}
		if p.seen[e.ID] {
			p.dupes++
			continue
		}
		p.seen[e.ID] = true
		p.awarded[e.User] += 100
	}
	return nil
}

func (p *points) redemptions() (n, dupes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen), p.dupes
}

// TestPointsConsumerAcrossARelayCrash: users redeem coupons through the
// API; a relay publishes the events and dies before marking them
// relayed; after its lease another relay, taking other batches (so other
// message ids, which the bus does not drop), publishes them again. The
// points service, de-duplicating by event id, awards each redemption
// once.
func TestPointsConsumerAcrossARelayCrash(t *testing.T) {
	ts := newClaimServer(t, nil)
	p := &points{seen: map[string]bool{}, awarded: map[int64]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.claims.Bus.Consume(ctx, quan.CouponEventSubject, "points", quan.ConsumeOptions{}, p.handle)
	}()
	defer func() {
		cancel()
		<-done
	}()

	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 10, 1)
	users := []int64{7, 8, 9}
	for i, id := range users {
		u := ts.user(t, id)
		cl := ts.claimed(t, u, tpl.ID)
		o := fmt.Sprintf("/api/v1/orders/o-%d", i)
		body := map[string]any{"items": order(12_000), "couponIds": []int64{cl.CouponID}, "expectedDiscount": 1000}
		ts.settle(t, u, o+"/lock", body).want(t, http.StatusOK, "")
		ts.settle(t, u, o+"/redeem", nil).want(t, http.StatusOK, "")
	}
	// The first relay publishes everything, then dies before marking any
	// of it relayed.
	now := testNow
	es, err := ts.store.TakeEvents(t.Context(), "relay-dead", now, now.Add(time.Minute), 100)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := events.Messages(es)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.claims.Bus.PublishMany(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	testrig.WaitFor(t, "3 redemptions", func() bool { n, _ := p.redemptions(); return n == 3 })
	// After its lease, a relay taking 2 at a time publishes them again.
	ts.setNow(now.Add(2 * time.Minute))
	r := &events.Relay{Store: ts.store, Bus: ts.claims.Bus, Owner: "relay-b", Batch: 2, Now: ts.clock}
	for {
		n, err := r.RelayOnce(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if r.Counters.Retaken.Load() != int64(len(es)) {
		t.Fatalf("relay-b took %d again, want all %d", r.Counters.Retaken.Load(), len(es))
	}
	// Once a later event arrives, every earlier one has.
	u := ts.user(t, 10)
	cl := ts.claimed(t, u, tpl.ID)
	body := map[string]any{"items": order(12_000), "couponIds": []int64{cl.CouponID}, "expectedDiscount": 1000}
	ts.settle(t, u, "/api/v1/orders/o-last/lock", body).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/o-last/redeem", nil).want(t, http.StatusOK, "")
	for {
		n, err := r.RelayOnce(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	testrig.WaitFor(t, "the fourth redemption", func() bool { n, _ := p.redemptions(); return n == 4 })
	n, dupes := p.redemptions()
	p.mu.Lock()
	defer p.mu.Unlock()
	if dupes != 3 {
		t.Errorf("the points service dropped %d repeated redemptions, want the 3 published again", dupes)
	}
	for _, id := range append(users, 10) {
		if p.awarded[id] != 100 {
			t.Errorf("user %d awarded %d points, want 100 (one redemption)", id, p.awarded[id])
		}
	}
	t.Logf("%d redemptions, %d repeats dropped by event id", n, dupes)
}
