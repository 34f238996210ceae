package prom_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/prom"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/wallet"
)

var now = time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)

// fakeBus stores every publish and answers Backlog with backlog; Consume
// hands it deliveries.
type fakeBus struct {
	quan.Bus
	backlog    int64
	backlogErr error
	deliveries []quan.Message
}

func (b *fakeBus) PublishMany(context.Context, []quan.Message) error { return nil }
func (b *fakeBus) Backlog(context.Context, string, string) (int64, error) {
	return b.backlog, b.backlogErr
}
func (b *fakeBus) Consume(ctx context.Context, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) error {
	for _, m := range b.deliveries {
		handle(ctx, m)
	}
	return nil
}

// TestClaims: each answer of a claim counts under its result, the
// latency histogram sees every claim, and the bus's backlog is read at
// the scrape (and left out when the bus does not answer).
func TestClaims(t *testing.T) {
	cache := inmem.NewCache()
	const tpl = 7
	st := quan.TemplateState{ID: tpl, ShopNo: 1, Status: quan.TemplateActive, IssueStart: now.Add(-time.Hour),
		IssueEnd: now.Add(time.Hour), PerUserLimit: 1, Stock: 1}
	if err := cache.Prime(t.Context(), st, noHoldings); err != nil {
		t.Fatal(err)
	}
	bus := &fakeBus{backlog: 3}
	s := &claims.Service{Cache: cache, Bus: bus, Now: func() time.Time { return now }}
	reg := prometheus.NewPedanticRegistry()
	m := prom.Claims(&s.Counters, s.Bus)
	s.Latency = m
	reg.MustRegister(m)

	for _, c := range []struct {
		user int64
		want string
	}{{1, ""}, {2, quan.ESOLDOUT}} { // in this order: the stock is one
		if _, err := s.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: c.user}, tpl, ""); quan.ErrorCode(err) != c.want {
			t.Fatalf("claim of user %d: %v, want %q", c.user, err, c.want)
		}
	}
	if _, err := s.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: 1}, tpl, ""); quan.ErrorCode(err) != quan.ELIMIT {
		t.Fatalf("second claim of user 1: %v", err)
	}
	const want = `
# HELP quan_claim_handoff_pending Claims this process reserved whose hand-off to the bus has not returned yet.
# TYPE quan_claim_handoff_pending gauge
quan_claim_handoff_pending 0
# HELP quan_claim_persist_backlog_messages Bus messages of claim batches not yet acknowledged by the consumer that persists them (read from the bus at each scrape; the same for every process on one bus).
# TYPE quan_claim_persist_backlog_messages gauge
quan_claim_persist_backlog_messages 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "quan_claim_handoff_pending", "quan_claim_persist_backlog_messages"); err != nil {
		t.Error(err)
	}
	for result, n := range map[string]float64{"accepted": 1, "sold_out": 1, "limit_reached": 1, "not_active": 0,
		"not_started": 0, "ended": 0, "rate_limited": 0, "unknown_template": 0, "handoff_failed": 0, "found": 0} {
		if got := value(t, reg, "quan_claims_total", "result", result); got != n {
			t.Errorf("quan_claims_total{result=%q} = %v, want %v", result, got, n)
		}
	}
	if n := histogramCount(t, reg, "quan_claim_duration_seconds"); n != 3 {
		t.Errorf("quan_claim_duration_seconds_count = %d, want 3", n)
	}

	bus.backlogErr = errors.New("the bus is down")
	if n, err := testutil.GatherAndCount(reg, "quan_claim_persist_backlog_messages"); err != nil || n != 0 {
		t.Errorf("the backlog of a bus that does not answer: %d series, %v; want it left out", n, err)
	}
}

func noHoldings(yield func(quan.Holding, error) bool) {}

var _ iter.Seq2[quan.Holding, error] = noHoldings

// fakeTasks applies chunks with the counts of applied, one per chunk seq,
// or the error of failed.
type fakeTasks struct {
	quan.TaskStore
	counts map[int64]quan.TaskCounts
	errs   map[int64]error
}

func (s *fakeTasks) ApplyChunk(_ context.Context, c *quan.Chunk) (quan.TaskCounts, error) {
	return s.counts[c.Seq], s.errs[c.Seq]
}

// TestDistribution: chunks count by how their delivery went, and the rows
// of those applied by outcome.
func TestDistribution(t *testing.T) {
	chunk := func(seq int64, attempt int) quan.Message {
		data, err := quan.EncodeChunk(&quan.Chunk{TaskID: 1, Seq: seq, Rows: []quan.ChunkRow{{Line: 2, UserID: 5, Raw: "5"}}})
		if err != nil {
			t.Fatal(err)
		}
		return quan.Message{Subject: quan.ChunkSubject, Data: data, Attempt: attempt}
	}
	var applied quan.TaskCounts
	applied.Issued = 4
	applied.AddFailure(quan.CauseOutOfStock)
	applied.AddFailure(quan.CauseDuplicate)
	applied.AddFailure(quan.CauseDuplicate)
	store := &fakeTasks{
		counts: map[int64]quan.TaskCounts{1: applied, 2: applied},
		errs:   map[int64]error{3: quan.ErrChunkApplied, 4: errors.New("the store is down")},
	}
	bus := &fakeBus{deliveries: []quan.Message{chunk(1, 1), chunk(2, 2), chunk(3, 1), chunk(4, 1)}}
	d := &tasks.Runner{Store: store, Bus: bus}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.Distribution(&d.Counters))
	if err := d.ServeChunks(t.Context()); err != nil {
		t.Fatal(err)
	}
	for result, n := range map[string]float64{"applied": 1, "redelivered": 2, "failed": 1} {
		if got := value(t, reg, "quan_task_chunks_total", "result", result); got != n {
			t.Errorf("quan_task_chunks_total{result=%q} = %v, want %v", result, got, n)
		}
	}
	for outcome, n := range map[string]float64{"issued": 8, "out_of_stock": 2, "duplicate_in_file": 4, "invalid_id": 0,
		"inexact_number": 0, "limit_reached": 0, "template_inactive": 0} {
		if got := value(t, reg, "quan_task_rows_total", "outcome", outcome); got != n {
			t.Errorf("quan_task_rows_total{outcome=%q} = %v, want %v", outcome, got, n)
		}
	}
	if got := value(t, reg, "quan_lock_contention_total", "lock", "task_lease"); got != 0 {
		t.Errorf("task_lease contention %v", got)
	}
}

// fakeWallet sweeps lapsed and fails what err says.
type fakeWallet struct {
	wallet.CouponStores
	lapsed     []*quan.Coupon
	was        []quan.CouponStatus
	lapseErr   error
	orderOf    []*quan.Coupon
	orderCalls int
}

func (w *fakeWallet) LapseCoupons(_ context.Context, _ time.Time, limit int) ([]*quan.Coupon, []quan.CouponStatus, error) {
	cs, was := w.lapsed, w.was
	w.lapsed, w.was = nil, nil
	return cs, was, w.lapseErr
}

func (w *fakeWallet) OrderCoupons(context.Context, int64, string, []int64) ([]*quan.Coupon, error) {
	return w.orderOf, nil
}

// TestWallet: a sweep counts each coupon's change, and the locks that
// lapsed; a failed sweep counts an error; a refused release counts once.
func TestWallet(t *testing.T) {
	w := &fakeWallet{
		lapsed: []*quan.Coupon{{ID: 1, Status: quan.CouponExpired}, {ID: 2, Status: quan.CouponExpired}, {ID: 3, Status: quan.CouponAvailable}},
		was:    []quan.CouponStatus{quan.CouponAvailable, quan.CouponAvailable, quan.CouponLocked},
	}
	s := &wallet.Service{Coupons: w, Now: func() time.Time { return now }}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.Wallet(&s.Counters))
	if n, err := s.Sweep(t.Context(), 10); err != nil || n != 3 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	w.lapseErr = errors.New("the store is down")
	if _, err := s.Sweep(t.Context(), 10); err == nil {
		t.Fatal("a sweep of a store that failed succeeded")
	}
	// Releasing an order paid with is refused: refund it.
	w.orderOf = []*quan.Coupon{{ID: 4, UserID: 9, Status: quan.CouponUsed, OrderID: "o-1", ValidEnd: now.Add(time.Hour)}}
	if _, err := s.Release(t.Context(), quan.Identity{Role: quan.RoleService, KeyID: 1, Scopes: quan.NewScopeSet(quan.ScopeSettlement)}.ForUser(9), "o-1"); quan.ErrorCode(err) != quan.ETRANSITION {
		t.Fatalf("release of a paid order: %v", err)
	}
	for _, c := range []struct {
		from, to, result string
		want             float64
	}{
		{"available", "expired", "ok", 2},
		{"locked", "available", "ok", 1},
		{"available", "expired", "error", 1},
		{"locked", "available", "refused", 1},
		{"available", "locked", "ok", 0}, // shown before it happens
		{"locked", "used", "refused", 0},
	} {
		if got := value(t, reg, "quan_coupon_transitions_total", "from", c.from, "to", c.to, "result", c.result); got != c.want {
			t.Errorf("quan_coupon_transitions_total{from=%q,to=%q,result=%q} = %v, want %v", c.from, c.to, c.result, got, c.want)
		}
	}
	if got := value(t, reg, "quan_coupon_locks_expired_total"); got != 1 {
		t.Errorf("quan_coupon_locks_expired_total = %v, want 1", got)
	}
}

// fakeMonitor answers as its fields say.
type fakeMonitor struct {
	statuses        map[quan.TaskStatus]int64
	oldestRunning   time.Time
	oldestAvailable time.Time
	retries         int64
	err             error
}

func (m *fakeMonitor) TaskStatuses(context.Context) (map[quan.TaskStatus]int64, error) {
	return m.statuses, m.err
}
func (m *fakeMonitor) OldestRunningTask(context.Context) (time.Time, error) {
	return m.oldestRunning, m.err
}
func (m *fakeMonitor) OldestAvailableEnd(context.Context) (time.Time, error) {
	return m.oldestAvailable, m.err
}
func (m *fakeMonitor) StoreRetries() int64 { return m.retries }

// TestStore: the store's gauges as ages at the collector's clock, every
// task status shown, and a store that fails leaves its gauges out. It
// shares quan_lock_contention_total with the Distribution collector.
func TestMonitor(t *testing.T) {
	m := &fakeMonitor{
		statuses:        map[quan.TaskStatus]int64{quan.TaskRunning: 2, quan.TaskSucceeded: 5},
		oldestRunning:   now.Add(-90 * time.Second),
		oldestAvailable: now.Add(-6 * time.Minute),
		retries:         4,
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.Monitor(m, func() time.Time { return now }), prom.Distribution(&quan.DistributionCounters{}))
	const want = `
# HELP quan_coupon_expiry_lag_seconds How late the expiry of the oldest coupon still available past the end of its window is; 0 if none (read at each scrape).
# TYPE quan_coupon_expiry_lag_seconds gauge
quan_coupon_expiry_lag_seconds 360
# HELP quan_lock_contention_total Waits and retries on locks, by lock: task_lease (a runner lost a task's lease to another), store_retry (the store ran a transaction again after a deadlock, a lock wait timeout or a concurrent change).
# TYPE quan_lock_contention_total counter
quan_lock_contention_total{lock="store_retry"} 4
quan_lock_contention_total{lock="task_lease"} 0
# HELP quan_task_stalled_seconds How long the running task that progressed least lately has gone without a chunk applied: now minus the oldest last change among running tasks; 0 if none runs (read at each scrape).
# TYPE quan_task_stalled_seconds gauge
quan_task_stalled_seconds 90
# HELP quan_tasks Distribution tasks in the store, by status (read at each scrape).
# TYPE quan_tasks gauge
quan_tasks{status="canceled"} 0
quan_tasks{status="failed"} 0
quan_tasks{status="pending"} 0
quan_tasks{status="running"} 2
quan_tasks{status="succeeded"} 5
`
	names := []string{"quan_coupon_expiry_lag_seconds", "quan_lock_contention_total", "quan_task_stalled_seconds", "quan_tasks"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// Nothing running, nothing overdue: 0, also for a coupon not yet due.
	m.statuses, m.oldestRunning, m.oldestAvailable = nil, time.Time{}, now.Add(time.Hour)
	if got := value(t, reg, "quan_task_stalled_seconds"); got != 0 {
		t.Errorf("quan_task_stalled_seconds with none running = %v", got)
	}
	if got := value(t, reg, "quan_coupon_expiry_lag_seconds"); got != 0 {
		t.Errorf("quan_coupon_expiry_lag_seconds with none overdue = %v", got)
	}

	m.err = errors.New("the store is down")
	if n, err := testutil.GatherAndCount(reg, "quan_tasks", "quan_task_stalled_seconds", "quan_coupon_expiry_lag_seconds"); err != nil || n != 0 {
		t.Errorf("a store that fails: %d series, %v; want its gauges left out", n, err)
	}
}

// value returns the value of the series of name whose labels are
// labelPairs (name, value, ...), failing the test if there is none.
func value(t *testing.T, g prometheus.Gatherer, name string, labelPairs ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labelPairs); i += 2 {
				if have[labelPairs[i]] != labelPairs[i+1] {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no series %s%v", name, labelPairs)
	return 0
}

// histogramCount returns the observations of histogram name.
func histogramCount(t *testing.T, g prometheus.Gatherer, name string) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no histogram %s", name)
	return 0
}
