package quantest

import (
	"maps"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// MonitorStores are the ports of one store that monitoring reads, with
// those the suite fills it through.
type MonitorStores struct {
	WalletStores
	Monitor quan.MonitorStore
}

// TestMonitorStore runs the conformance suite of quan.MonitorStore.
func TestMonitorStore(t *testing.T, newStores func(t *testing.T) MonitorStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, MonitorStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Empty", testMonitorEmpty)
	run("TaskStatuses", testMonitorTaskStatuses)
	run("OldestRunningTask", testMonitorOldestRunning)
	run("OldestAvailableEnd", testMonitorOldestAvailable)
}

func testMonitorEmpty(t *testing.T, s MonitorStores) {
	ctx := t.Context()
	if got, err := s.Monitor.TaskStatuses(ctx); err != nil || len(got) != 0 {
		t.Errorf("TaskStatuses of an empty store = %v, %v; want none", got, err)
	}
	if got, err := s.Monitor.OldestRunningTask(ctx); err != nil || !got.IsZero() {
		t.Errorf("OldestRunningTask of an empty store = %v, %v; want the zero time", got, err)
	}
	if got, err := s.Monitor.OldestAvailableEnd(ctx); err != nil || !got.IsZero() {
		t.Errorf("OldestAvailableEnd of an empty store = %v, %v; want the zero time", got, err)
	}
	if n := s.Monitor.StoreRetries(); n != 0 {
		t.Errorf("StoreRetries of a store that did nothing = %d", n)
	}
}

func testMonitorTaskStatuses(t *testing.T, s MonitorStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	want := map[quan.TaskStatus]int64{}
	for i, st := range []quan.TaskStatus{quan.TaskPending, quan.TaskPending, quan.TaskRunning, quan.TaskSucceeded,
		quan.TaskSucceeded, quan.TaskSucceeded, quan.TaskFailed, quan.TaskCanceled} {
		task := newTask(t, int64(1+i%2), tpl.ID, string(st))
		task.Status = st
		if st == quan.TaskRunning {
			task.StartedAt, task.Owner, task.LeaseUntil = base, "runner-a", base.Add(time.Minute)
		}
		createTask(t, s.TaskStores, task)
		want[st]++
	}
	got, err := s.Monitor.TaskStatuses(t.Context())
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("TaskStatuses = %v, %v; want %v", got, err, want)
	}
}

func testMonitorOldestRunning(t *testing.T, s MonitorStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	done := newTask(t, 1, tpl.ID, "done long ago")
	done.Status, done.UpdatedAt = quan.TaskSucceeded, base.Add(-time.Hour)
	createTask(t, s.TaskStores, done)
	createTask(t, s.TaskStores, newTask(t, 1, tpl.ID, "first"))
	createTask(t, s.TaskStores, newTask(t, 1, tpl.ID, "second"))
	if got, err := s.Monitor.OldestRunningTask(t.Context()); err != nil || !got.IsZero() {
		t.Fatalf("OldestRunningTask with no task running = %v, %v; want the zero time", got, err)
	}
	first, second := base.Add(time.Minute), base.Add(2*time.Minute)
	a := claim(t, s.TaskStores, "runner-a", first, first.Add(time.Hour))
	claim(t, s.TaskStores, "runner-b", second, second.Add(time.Hour))
	if got, err := s.Monitor.OldestRunningTask(t.Context()); err != nil || !got.Equal(first) {
		t.Fatalf("OldestRunningTask = %v, %v; want %v, the first task's start", got, err, first)
	}
	// A task that ends leaves the running ones.
	if _, err := s.Tasks.UpdateTask(t.Context(), quan.AnyShop, a.ID, func(cur *quan.Task) error {
		return cur.Cancel(second.Add(time.Minute))
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Monitor.OldestRunningTask(t.Context()); err != nil || !got.Equal(second) {
		t.Fatalf("OldestRunningTask after the first ended = %v, %v; want %v", got, err, second)
	}
}

func testMonitorOldestAvailable(t *testing.T, s MonitorStores) {
	cs := walletCoupons(t, s.WalletStores, 1, 2)
	end := cs[0].ValidEnd
	if got, err := s.Monitor.OldestAvailableEnd(t.Context()); err != nil || !got.Equal(end) {
		t.Fatalf("OldestAvailableEnd = %v, %v; want %v", got, err, end)
	}
	// Coupons that are no longer available do not count, however
	// overdue; an expired one has left them too.
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{cs[0].ID}, func(x []*quan.Coupon) error {
		return x[0].Lock("o", walletNow, walletNow.Add(time.Minute))
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Monitor.OldestAvailableEnd(t.Context()); err != nil || !got.Equal(end) {
		t.Fatalf("OldestAvailableEnd with one of two locked = %v, %v; want %v", got, err, end)
	}
	if _, _, err := s.Wallet.LapseCoupons(t.Context(), end, 10); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Monitor.OldestAvailableEnd(t.Context()); err != nil || !got.IsZero() {
		t.Fatalf("OldestAvailableEnd once the sweeper expired the coupons = %v, %v; want the zero time", got, err)
	}
}
