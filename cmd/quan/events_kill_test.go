package main

import (
	"cmp"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/events"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/nats"
)

// TestEventsKill records coupon events in a data folder that `quan
// serve` relays to its embedded bus, kills it with SIGKILL while the
// events stream out and starts it again. Once it is done, every event is
// in the embedded bus's stream, each id at least once; the duplicates
// number at most one batch.
func TestEventsKill(t *testing.T) {
	env := testEnv(t)
	bin := buildQuan(t)
	const n = 50_000
	recordCouponEvents(t, env, n)
	serve := []string{"serve", "--data", env["QUAN_DATA"], "--addr", "127.0.0.1:0", "--event-lease", "3s"}
	a := startAdminProc(t, bin, serve, nil)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if p, _ := pendingEvents(t, env); p <= n-n/5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay relayed too little within 2 minutes")
		}
	}
	a.kill()
	pending, _ := pendingEvents(t, env)
	t.Logf("killed the relay with %d events not relayed", pending)
	a = startAdminProc(t, bin, serve, nil)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if p, _ := pendingEvents(t, env); p == 0 {
			break
		}
		if time.Now().After(deadline) {
			p, _ := pendingEvents(t, env)
			t.Fatalf("%d events not relayed 2 minutes after the restart", p)
		}
	}
	a.stop()

	// The stream the relays published to, read as a consumer would.
	srv, err := nats.StartEmbedded(t.Context(), filepath.Join(env["QUAN_DATA"], "nats"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	bus, err := srv.Bus(t.Context(), nats.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	log := consumeCouponEvents(t, bus)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, d := log.count(); d >= n {
			break
		}
		if time.Now().After(deadline) {
			_, d := log.count()
			t.Fatalf("%d of %d events in the stream", d, n)
		}
	}
	if backlog, err := bus.Backlog(t.Context(), quan.CouponEventSubject, "points"); err != nil || backlog != 0 {
		t.Fatalf("backlog %d, %v after every event was read", backlog, err)
	}
	received, distinct := log.count()
	t.Logf("in all %d received, %d distinct, %d duplicates", received, distinct, received-distinct)
	if distinct != n || received-distinct > events.DefaultBatch {
		t.Fatalf("%d distinct events, %d duplicates; want %d, at most %d", distinct, received-distinct, n, events.DefaultBatch)
	}
}

// consumeCouponEvents consumes quan.CouponEventSubject on bus as the
// durable "points" until the test ends, counting the events by id.
func consumeCouponEvents(t *testing.T, bus quan.Bus) *eventCount {
	t.Helper()
	log := &eventCount{seen: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		err := bus.Consume(ctx, quan.CouponEventSubject, "points", quan.ConsumeOptions{Concurrency: 1}, func(_ context.Context, m quan.Message) error {
			es, err := quan.DecodeCouponEvents(m.Data)
			if err != nil {
				return err
			}
			log.add(es)
			return nil
		})
		if err != nil {
			t.Errorf("consume: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-consumed
	})
	return log
}

// TestEventsKillOnMySQL records coupon events in a MySQL store that two
// `quan worker` processes on an external NATS bus relay, kills one with
// SIGKILL while the events stream out, and restarts it. Once the
// survivors are done, every event is on the bus, each id present at
// least once; the duplicates (a batch the dead relay published and never
// marked relayed, if the bus's de-duplication did not drop it) number at
// most one batch.
func TestEventsKillOnMySQL(t *testing.T) {
	urls := integration.Need(t, "QUAN_TEST_NATS")
	env := testEnv(t)
	env["QUAN_STORE"] = mysqltest.URL(t)
	env["QUAN_CACHE"] = "none"
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	env["QUAN_BUS"] = urls[0] + "?stream=QUAN_EVENTSKILL_" + id + "&namespace=ek" + id
	bin := buildQuan(t)
	const n = 50_000
	recordCouponEvents(t, env, n)
	if p, _ := pendingEvents(t, env); p != n {
		t.Fatalf("%d events recorded, want %d", p, n)
	}

	bus, err := nats.OpenConfig(t.Context(), urls[0], nats.Config{Stream: "QUAN_EVENTSKILL_" + id, Namespace: "ek" + id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	log := consumeCouponEvents(t, bus)

	a := startRelayWorker(t, bin, env)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, d := log.count(); d >= n/5 {
			break
		}
		if time.Now().After(deadline) {
			p, _ := pendingEvents(t, env)
			_, d := log.count()
			t.Fatalf("the bus got %d events within 2 minutes; %d not relayed", d, p)
		}
	}
	a.kill()
	atKill, _ := log.count()
	pending, _ := pendingEvents(t, env)
	t.Logf("killed the relay with %d events received, %d not relayed", atKill, pending)
	b := startRelayWorker(t, bin, env)
	defer b.stop()
	a = startRelayWorker(t, bin, env)
	defer a.stop()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, d := log.count()
		if p, _ := pendingEvents(t, env); d >= n && p == 0 {
			break
		}
		if time.Now().After(deadline) {
			p, _ := pendingEvents(t, env)
			t.Fatalf("the bus got %d of %d events within 3 minutes of the kill, %d not relayed", d, n, p)
		}
	}
	received, distinct := log.count()
	dupes := received - distinct
	t.Logf("%d received at the kill; in all %d received, %d distinct, %d duplicates", atKill, received, distinct, dupes)
	log.mu.Lock()
	defer log.mu.Unlock()
	for id := range log.seen {
		if _, err := quan.ParseEventID(id); err != nil {
			t.Fatalf("an event without an id: %q", id)
		}
	}
	if distinct != n {
		t.Fatalf("%d distinct events on the bus, want %d", distinct, n)
	}
	if dupes > events.DefaultBatch {
		t.Fatalf("%d duplicates, more than one batch (%d)", dupes, events.DefaultBatch)
	}
}

// eventCount counts the coupon events a consumer received by id.
type eventCount struct {
	mu   sync.Mutex
	seen map[string]int
	n    int
}

func (c *eventCount) add(es []quan.CouponEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range es {
		c.seen[e.ID]++
		c.n++
	}
}

func (c *eventCount) count() (received, distinct int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, len(c.seen)
}

// recordCouponEvents issues a coupon to each of n users of a new active
// template, in claim batches of 1,000, each recording its event.
func recordCouponEvents(t *testing.T, env map[string]string, n int) {
	t.Helper()
	a := openLocal(t, env)
	defer a.Close()
	st := a.Backends.Store
	now := time.Now().UTC().Truncate(time.Microsecond)
	tpl := &quan.Template{ShopNo: 1, TemplateSpec: quan.TemplateSpec{
		Name: "points", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 500}, Source: quan.SourceShop,
		Scope: quan.Scope{Kind: quan.ScopeAll}, IssueStart: now.Add(-time.Hour), IssueEnd: now.Add(48 * time.Hour),
		Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 48}, PerUserLimit: 1,
	}, Stock: int64(n), TotalStock: int64(n), Status: quan.TemplateActive, CreatedBy: "merchant:1", CreatedAt: now, UpdatedAt: now}
	if err := tpl.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTemplate(t.Context(), tpl, "merchant:1"); err != nil {
		t.Fatal(err)
	}
	for first := 1; first <= n; first += 1000 {
		var cs []*quan.Claim
		for u := first; u < first+1000 && u <= n; u++ {
			cs = append(cs, &quan.Claim{ID: quan.NewClaimID(tpl.ID, int64(u)), TemplateID: tpl.ID, UserID: int64(u), Status: quan.ClaimPending, At: now})
		}
		got, err := st.IssueClaims(t.Context(), cs, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			if c.Status != quan.ClaimIssued {
				t.Fatalf("claim %s: %s %s", c.ID, c.Status, c.Reason)
			}
		}
	}
}

func pendingEvents(t *testing.T, env map[string]string) (int64, time.Time) {
	t.Helper()
	a := openLocal(t, env)
	defer a.Close()
	n, oldest, err := a.Backends.Store.PendingEvents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n, oldest
}

// startRelayWorker starts `quan worker` on env's backends, its relay
// holding a batch for 3 s, and returns once its admin listener is up.
func startRelayWorker(t *testing.T, bin string, env map[string]string) *dispatcherProc {
	t.Helper()
	args := []string{"worker", "--data", env["QUAN_DATA"], "--store", cmp.Or(env["QUAN_STORE"], "sqlite:"), "--event-lease", "3s"}
	for _, k := range []string{"cache", "bus"} {
		if v, ok := env["QUAN_"+strings.ToUpper(k)]; ok {
			args = append(args, "--"+k, v)
		}
	}
	return startAdminProc(t, bin, args, nil)
}
