package events_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/events"
	"github.com/quanhq/quan/internal/testrig"
)

// issue gives each user a coupon of the rig's template, each recording a
// coupon.issued event.
func issue(t *testing.T, r *testrig.ClaimRig, users ...int64) {
	t.Helper()
	var cs []*quan.Claim
	for _, u := range users {
		cs = append(cs, &quan.Claim{ID: quan.NewClaimID(r.Tpl.ID, u), TemplateID: r.Tpl.ID, UserID: u, Status: quan.ClaimPending, At: testrig.ClaimAt})
	}
	got, err := r.Store.IssueClaims(t.Context(), cs, testrig.ClaimAt)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Status != quan.ClaimIssued {
			t.Fatalf("claim %s: %s", c.ID, c.Reason)
		}
	}
}

// busLog keeps what a downstream consumer of a subject receives.
type busLog struct {
	mu    sync.Mutex
	ids   map[string]int // event id → times received
	coups []quan.CouponEvent
	other []quan.Event
}

func (l *busLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, k := range l.ids {
		n += k
	}
	return n
}

func consume(t *testing.T, bus quan.Bus, subject string) *busLog {
	t.Helper()
	l := &busLog{ids: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		bus.Consume(ctx, subject, "test-"+subject[len(subject)-5:], quan.ConsumeOptions{}, func(_ context.Context, m quan.Message) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if m.Subject == quan.CouponEventSubject {
				es, err := quan.DecodeCouponEvents(m.Data)
				if err != nil {
					t.Error(err)
					return nil
				}
				for _, e := range es {
					l.ids[e.ID]++
				}
				l.coups = append(l.coups, es...)
				return nil
			}
			var e quan.Event
			if err := json.Unmarshal(m.Data, &e); err != nil {
				t.Error(err)
				return nil
			}
			l.ids[e.ID()]++
			l.other = append(l.other, e)
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l
}

func newRelay(r *testrig.ClaimRig, owner string, clock *testrig.Clock) *events.Relay {
	return &events.Relay{Store: r.Store, Bus: r.Bus, Owner: owner, Batch: 3, Lease: time.Minute, Now: clock.At()}
}

func TestRelayPublishesEveryEvent(t *testing.T) {
	r := testrig.NewClaimRig(t, 100)
	log := consume(t, r.Bus, quan.CouponEventSubject)
	issue(t, r, 1, 2, 3, 4, 5)
	relay := newRelay(r, "relay-a", testrig.NewClock(testrig.ClaimAt))
	for {
		n, err := relay.RelayOnce(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	testrig.WaitFor(t, "5 events on the bus", func() bool { return log.count() >= 5 })
	log.mu.Lock()
	defer log.mu.Unlock()
	users := map[int64]bool{}
	for _, e := range log.coups {
		if e.Type != quan.EventCouponIssued || e.New != quan.CouponAvailable || e.Old != "" || e.Template != r.Tpl.ID || e.Coupon == 0 {
			t.Errorf("event %+v", e)
		}
		users[e.User] = true
	}
	if len(log.ids) != 5 || len(users) != 5 {
		t.Fatalf("received %v for users %v, want 5 events once each", log.ids, users)
	}
	if n, _, err := r.Store.PendingEvents(t.Context()); err != nil || n != 0 {
		t.Fatalf("PendingEvents after the relay = %d, %v", n, err)
	}
	if relay.Counters.Relayed.Load() != 5 || relay.Counters.Messages.Load() != 2 {
		t.Fatalf("counted %d relayed in %d messages; want 5 in 2 (batches of 3)", relay.Counters.Relayed.Load(), relay.Counters.Messages.Load())
	}
}

// TestRelayCrashPublishesOnce: a relay that published a batch and died
// before marking it relayed leaves it to another once its lease runs
// out, which publishes it again with the same message ids: the bus drops
// the repeat, and the consumer receives each event once.
func TestRelayCrashPublishesOnce(t *testing.T) {
	r := testrig.NewClaimRig(t, 100)
	log := consume(t, r.Bus, quan.CouponEventSubject)
	issue(t, r, 1, 2, 3, 4)
	clock := testrig.NewClock(testrig.ClaimAt)
	// relay-a takes and publishes a batch, then dies.
	es, err := r.Store.TakeEvents(t.Context(), "relay-a", clock.Now(), clock.Now().Add(time.Minute), 3)
	if err != nil || len(es) != 3 {
		t.Fatal(len(es), err)
	}
	ms, err := events.Messages(es)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Bus.PublishMany(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	// relay-b, inside relay-a's lease, relays only the fourth.
	b := newRelay(r, "relay-b", clock)
	if n, err := b.RelayOnce(t.Context()); err != nil || n != 1 {
		t.Fatalf("relay-b inside the lease took %d, %v", n, err)
	}
	clock.Add(time.Minute)
	if n, err := b.RelayOnce(t.Context()); err != nil || n != 3 {
		t.Fatalf("relay-b after the lease took %d, %v", n, err)
	}
	if b.Counters.Retaken.Load() != 3 {
		t.Errorf("retaken %d, want 3", b.Counters.Retaken.Load())
	}
	testrig.WaitFor(t, "4 events on the bus", func() bool { return log.count() >= 4 })
	// Another event after the repeat: once it arrives, the repeat would
	// have too.
	issue(t, r, 5)
	if n, err := b.RelayOnce(t.Context()); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	testrig.WaitFor(t, "the fifth event", func() bool { return log.count() >= 5 })
	log.mu.Lock()
	defer log.mu.Unlock()
	for id, k := range log.ids {
		if k != 1 {
			t.Errorf("event %s received %d times", id, k)
		}
	}
	if len(log.ids) != 5 {
		t.Fatalf("received %v, want 5 events", log.ids)
	}
}

func TestRelayOtherEvents(t *testing.T) {
	r := testrig.NewClaimRig(t, 100)
	log := consume(t, r.Bus, quan.EventSubject(quan.EventTemplateStatusChanged))
	if _, err := r.Store.UpdateTemplate(t.Context(), 1, r.Tpl.ID, "merchant:1", quan.ActionPause, func(x *quan.Template) error {
		x.Status, x.UpdatedAt = quan.TemplatePaused, testrig.ClaimAt
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	relay := newRelay(r, "relay-a", testrig.NewClock(testrig.ClaimAt))
	if n, err := relay.RelayOnce(t.Context()); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	testrig.WaitFor(t, "the template's event", func() bool { return log.count() >= 1 })
	log.mu.Lock()
	defer log.mu.Unlock()
	e := log.other[0]
	var tpl quan.Template
	if err := json.Unmarshal(e.Data, &tpl); err != nil || e.Type != quan.EventTemplateStatusChanged || tpl.ID != r.Tpl.ID || tpl.Status != quan.TemplatePaused || e.ShopNo != 1 {
		t.Fatalf("event %+v: %+v, %v", e, tpl, err)
	}
}
