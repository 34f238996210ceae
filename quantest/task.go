package quantest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TaskStores are the ports of one store that the task suite drives
// together: distribution reads templates, takes their stock and creates
// the coupons users hold. All three must work on the same data.
type TaskStores struct {
	Templates quan.TemplateStore
	Tasks     quan.TaskStore
	Coupons   quan.CouponStore
}

// TestTaskStore runs the conformance suite of quan.TaskStore and
// quan.CouponStore. newStores returns the ports of a fresh, empty store for
// each subtest and registers its cleanup with t.Cleanup. The suite asserts
// only what the doc comments of the ports, quan.PlanChunk and
// quan.NewCoupon promise.
func TestTaskStore(t *testing.T, newStores func(t *testing.T) TaskStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, TaskStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}

	run("CreateTask/SetsIDAndStoresEveryField", testCreateTaskStoresEveryField)
	run("CreateTask/RetryOfLinksToTheRetriedTask", testCreateTaskRetryOf)
	run("Task/ErrNotFound", testTaskNotFound)
	run("Task/AnyShopSeesEveryShop", testTaskAnyShop)
	run("Tasks/FiltersByShopAndStatus", testTasksFilters)
	run("Tasks/PagesNewestFirstWithTotal", testTasksPaging)
	run("Tasks/LimitDefaultsAndIsCapped", testTasksLimits)
	run("Tasks/EmptyWithoutError", testTasksEmpty)
	run("UpdateTask/SavesAndReturns", testUpdateTaskSaves)
	run("UpdateTask/FnErrorWritesNothing", testUpdateTaskFnError)
	run("UpdateTask/ErrNotFound", testUpdateTaskNotFound)
	run("UpdateTask/StalledSavedAndCleared", testUpdateTaskStalled)

	run("ClaimTask/NilWhenNoTaskNeedsARunner", testClaimNone)
	run("ClaimTask/PendingDueBecomesRunning", testClaimPending)
	run("ClaimTask/PendingWaitsForSendAt", testClaimNotYetDue)
	run("ClaimTask/ExpiredLeaseIsTakenOver", testClaimExpiredLease)
	run("ClaimTask/OldestFirstAndOnce", testClaimOrder)

	run("ApplyChunk/IssuesOneCouponPerRow", testApplyIssues)
	run("ApplyChunk/PerUserLimit", testApplyPerUserLimit)
	run("ApplyChunk/OutOfStockMidChunk", testApplyOutOfStock)
	run("ApplyChunk/TemplateInactive", testApplyTemplateInactive)
	run("ApplyChunk/KeepsPreDecidedCauses", testApplyPreDecided)
	run("ApplyChunk/SumsCountersAcrossChunks", testApplyAcrossChunks)
	run("ApplyChunk/ErrLeaseLostWritesNothing", testApplyLeaseLost)
	run("ApplyChunk/AnyOrderOnceEach", testApplyOutOfOrder)
	run("ApplyChunk/RedeliveryRace", testApplyRedeliveryRace)
	run("ApplyChunk/ConcurrentTasks", testApplyConcurrentTasks)
	run("ApplyChunk/DryRunIssuesNothing", testApplyDryRun)
	run("Failures/LineOrderAndPaging", testFailuresPaging)
	run("Coupons/UserCouponsAndStatsAgree", testCouponsAgree)
	run("Coupons/PageAndHeldAgreeWithList", testCouponPageAndHeld)

	run("Stampede/TasksAndClaimsNeverOversell", testDistributionStampede)
}

// newTask returns a valid pending task of shop distributing template.
func newTask(t *testing.T, shop, template int64, name string) *quan.Task {
	t.Helper()
	task := &quan.Task{
		ShopNo:     shop,
		TemplateID: template,
		Name:       name,
		FileName:   "用户名单.xlsx",
		FilePath:   "/var/lib/quan/uploads/" + name + ".xlsx",
		FileSize:   4096,
		FileSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Notify:     []quan.NotifyType{quan.NotifyInbox, quan.NotifySMS},
		ChunkSize:  quan.DefaultChunkSize,
		Status:     quan.TaskPending,
		CreatedBy:  fmt.Sprintf("merchant:%d", shop),
		CreatedAt:  base,
		UpdatedAt:  base,
	}
	if err := task.Validate(); err != nil {
		t.Fatalf("the suite built an invalid task: %v", err)
	}
	return task
}

// createTask stores task and returns it with its ID set.
func createTask(t *testing.T, s TaskStores, task *quan.Task) *quan.Task {
	t.Helper()
	if err := s.Tasks.CreateTask(t.Context(), task); err != nil {
		t.Fatalf("CreateTask(%q): %v", task.Name, err)
	}
	if task.ID <= 0 {
		t.Fatalf("CreateTask(%q) set ID %d, want a positive id", task.Name, task.ID)
	}
	return task
}

// getTask returns task id, seen by AnyShop, failing the test if it cannot.
func getTask(t *testing.T, s TaskStores, id int64) *quan.Task {
	t.Helper()
	task, err := s.Tasks.Task(t.Context(), quan.AnyShop, id)
	if err != nil {
		t.Fatalf("Task(%d): %v", id, err)
	}
	return task
}

// assertTask compares got with want field by field: times with
// time.Time.Equal, notification lists as lists (the stored nil and empty
// alike, but the one read never nil), the rest exactly.
func assertTask(t *testing.T, got, want *quan.Task) {
	t.Helper()
	if got == nil {
		t.Fatalf("got no task, want %d %q", want.ID, want.Name)
	}
	times := []struct {
		field     string
		got, want time.Time
	}{
		{"SendAt", got.SendAt, want.SendAt},
		{"CreatedAt", got.CreatedAt, want.CreatedAt},
		{"StartedAt", got.StartedAt, want.StartedAt},
		{"FinishedAt", got.FinishedAt, want.FinishedAt},
		{"UpdatedAt", got.UpdatedAt, want.UpdatedAt},
		{"LeaseUntil", got.LeaseUntil, want.LeaseUntil},
	}
	for _, tm := range times {
		if !tm.got.Equal(tm.want) {
			t.Errorf("task %d: %s = %v, want %v", want.ID, tm.field, tm.got, tm.want)
		}
	}
	if !slices.Equal(got.Notify, want.Notify) {
		t.Errorf("task %d: Notify = %q, want %q", want.ID, got.Notify, want.Notify)
	}
	if got.Notify == nil {
		t.Errorf("task %d: Notify is nil, want an empty slice for none", want.ID)
	}
	switch gs, ws := got.Stalled, want.Stalled; {
	case (gs == nil) != (ws == nil):
		t.Errorf("task %d: Stalled = %+v, want %+v", want.ID, gs, ws)
	case gs != nil && (gs.Code != ws.Code || gs.Backend != ws.Backend || gs.Reason != ws.Reason || !gs.Since.Equal(ws.Since)):
		t.Errorf("task %d: Stalled = %+v, want %+v", want.ID, *gs, *ws)
	}
	g, w := *got, *want
	for _, task := range []*quan.Task{&g, &w} {
		task.SendAt, task.CreatedAt, task.StartedAt = time.Time{}, time.Time{}, time.Time{}
		task.FinishedAt, task.UpdatedAt, task.LeaseUntil = time.Time{}, time.Time{}, time.Time{}
		task.Notify = nil
		task.Stalled = nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("task %d differs:\n got %+v\nwant %+v", want.ID, g, w)
	}
}

func taskIDs(ts []*quan.Task) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func testCreateTaskStoresEveryField(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	plain := newTask(t, 1, tpl.ID, "plain")
	plain.Notify = nil

	full := newTask(t, 2, tpl.ID, "every field")
	full.Sheet = "第二页"
	full.Notify = []quan.NotifyType{quan.NotifyPopup, quan.NotifyEmail, quan.NotifyInbox, quan.NotifySMS}
	full.SendAt = base.Add(3 * time.Hour)
	full.DryRun = true
	full.ChunkSize = 777
	full.Status = quan.TaskRunning
	full.Reason = "not yet"
	full.Counts = quan.TaskCounts{Rows: 100, Valid: 90, Issued: 80, Canceled: 1, Failed: quan.FailedCounts{
		InvalidID: 2, InexactNumber: 3, Duplicate: 4, LimitReached: 5, OutOfStock: 6, TemplateInactive: 7, NotEligible: 8}}
	full.ChunksDone = 4
	full.BytesRead = 1 << 20
	full.BytesTotal = 1 << 30
	full.ReportPath = "/var/lib/quan/reports/9.csv"
	full.StartedAt = base.Add(time.Minute)
	full.FinishedAt = base.Add(2 * time.Minute)
	full.UpdatedAt = base.Add(3 * time.Minute)
	full.Owner = "runner-a"
	full.LeaseUntil = base.Add(4 * time.Minute)
	full.RetryOf = 9_000_000_000_001 // beyond 32 bits
	full.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	full.Segment = `user.level >= 2 && "vip" in user.tags && user.attrs.?city.orValue("") == "上海"`

	seen := map[int64]bool{}
	for _, want := range []*quan.Task{plain, full} {
		createTask(t, s, want)
		if seen[want.ID] {
			t.Fatalf("CreateTask reused id %d", want.ID)
		}
		seen[want.ID] = true
		got, err := s.Tasks.Task(t.Context(), want.ShopNo, want.ID)
		if err != nil {
			t.Fatalf("Task(%d, %d): %v", want.ShopNo, want.ID, err)
		}
		assertTask(t, got, want)
	}
}

// testCreateTaskRetryOf checks that a retry keeps the link to the task it
// retries, and its trace parent, through every way a task is read and
// written: Task, Tasks, UpdateTask and ClaimTask.
func testCreateTaskRetryOf(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	first := newTask(t, 1, tpl.ID, "first")
	first.Status = quan.TaskSucceeded
	createTask(t, s, first)
	retry := newTask(t, 1, tpl.ID, "first (retry of task)")
	retry.RetryOf = first.ID
	retry.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	createTask(t, s, retry)

	if got := getTask(t, s, first.ID); got.RetryOf != 0 {
		t.Errorf("task %d of an uploaded file: RetryOf = %d, want 0", first.ID, got.RetryOf)
	}
	assertTask(t, getTask(t, s, retry.ID), retry)
	ts, _ := listTasks(t, s, quan.TaskFilter{ShopNo: 1})
	if len(ts) != 2 || ts[0].ID != retry.ID || ts[0].RetryOf != first.ID || ts[1].RetryOf != 0 {
		t.Errorf("Tasks lists %+v, want the retry (RetryOf %d) then the first task (RetryOf 0)", ts, first.ID)
	}
	now := base.Add(time.Hour)
	claimed := claim(t, s, "runner-a", now, now.Add(time.Minute))
	if claimed == nil || claimed.ID != retry.ID || claimed.RetryOf != first.ID || claimed.TraceParent != retry.TraceParent {
		t.Fatalf("ClaimTask = %+v, want task %d retrying %d, under trace %s", claimed, retry.ID, first.ID, retry.TraceParent)
	}
	got, err := s.Tasks.UpdateTask(t.Context(), 1, retry.ID, func(t *quan.Task) error {
		t.BytesTotal = 99
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateTask(%d): %v", retry.ID, err)
	}
	if got.TraceParent != retry.TraceParent || getTask(t, s, retry.ID).TraceParent != retry.TraceParent {
		t.Errorf("after UpdateTask: TraceParent = %q, want %q", got.TraceParent, retry.TraceParent)
	}
	if got.RetryOf != first.ID || getTask(t, s, retry.ID).RetryOf != first.ID {
		t.Errorf("after UpdateTask: RetryOf = %d (returned), %d (read); want %d", got.RetryOf, getTask(t, s, retry.ID).RetryOf, first.ID)
	}
}

func testTaskNotFound(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	task := createTask(t, s, newTask(t, 1, tpl.ID, "shop 1's"))
	for _, c := range []struct{ shop, id int64 }{{2, task.ID}, {1, 999_999}, {quan.AnyShop, 999_999}} {
		if got, err := s.Tasks.Task(t.Context(), c.shop, c.id); !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("Task(%d, %d) = %v, %v; want ErrNotFound", c.shop, c.id, got, err)
		}
	}
}

func testTaskAnyShop(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	for _, shop := range []int64{1, 2, 3} {
		want := createTask(t, s, newTask(t, shop, tpl.ID, fmt.Sprint("shop ", shop)))
		assertTask(t, getTask(t, s, want.ID), want)
	}
}

// listTasks calls Tasks and fails the test on error.
func listTasks(t *testing.T, s TaskStores, f quan.TaskFilter) ([]*quan.Task, int) {
	t.Helper()
	ts, total, err := s.Tasks.Tasks(t.Context(), f)
	if err != nil {
		t.Fatalf("Tasks(%+v): %v", f, err)
	}
	return ts, total
}

// assertTasks checks that f matches exactly want, newest first, in one page.
func assertTasks(t *testing.T, s TaskStores, f quan.TaskFilter, want ...*quan.Task) {
	t.Helper()
	ts, total := listTasks(t, s, f)
	wantIDs := taskIDs(want)
	slices.Sort(wantIDs)
	slices.Reverse(wantIDs)
	if got := taskIDs(ts); !slices.Equal(got, wantIDs) || total != len(want) {
		t.Errorf("Tasks(%+v) = ids %v, total %d; want %v, %d", f, got, total, wantIDs, len(want))
	}
}

func testTasksFilters(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	mk := func(shop int64, st quan.TaskStatus) *quan.Task {
		task := newTask(t, shop, tpl.ID, fmt.Sprintf("%d %s", shop, st))
		task.Status = st
		return createTask(t, s, task)
	}
	p1, r1, d1, p1b := mk(1, quan.TaskPending), mk(1, quan.TaskRunning), mk(1, quan.TaskSucceeded), mk(1, quan.TaskPending)
	p2, f2 := mk(2, quan.TaskPending), mk(2, quan.TaskFailed)

	assertTasks(t, s, quan.TaskFilter{ShopNo: 1}, p1, r1, d1, p1b)
	assertTasks(t, s, quan.TaskFilter{ShopNo: 2}, p2, f2)
	assertTasks(t, s, quan.TaskFilter{ShopNo: 3})
	assertTasks(t, s, quan.TaskFilter{ShopNo: 1, Status: quan.TaskPending}, p1, p1b)
	assertTasks(t, s, quan.TaskFilter{ShopNo: 1, Status: quan.TaskFailed})
	assertTasks(t, s, quan.TaskFilter{ShopNo: quan.AnyShop}, p1, r1, d1, p1b, p2, f2)
	assertTasks(t, s, quan.TaskFilter{ShopNo: quan.AnyShop, Status: quan.TaskPending}, p1, p1b, p2)

	// A listed task is a whole task.
	ts, _ := listTasks(t, s, quan.TaskFilter{ShopNo: 1, Status: quan.TaskSucceeded})
	if len(ts) == 1 {
		assertTask(t, ts[0], d1)
	}
}

func testTasksPaging(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	var all []int64
	for range 7 {
		all = append(all, createTask(t, s, newTask(t, 1, tpl.ID, "paged")).ID)
		createTask(t, s, newTask(t, 2, tpl.ID, "other shop"))
	}
	slices.Reverse(all)

	var paged []int64
	for _, c := range []struct{ offset, n int }{{0, 3}, {3, 3}, {6, 1}, {7, 0}, {100, 0}} {
		ts, total := listTasks(t, s, quan.TaskFilter{ShopNo: 1, Offset: c.offset, Limit: 3})
		if len(ts) != c.n || total != len(all) {
			t.Errorf("Offset %d, Limit 3: got %d tasks, total %d; want %d, %d", c.offset, len(ts), total, c.n, len(all))
		}
		paged = append(paged, taskIDs(ts)...)
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages hold ids %v, want %v (newest first)", paged, all)
	}
}

func testTasksLimits(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	n := quan.MaxPageSize + 3
	for range n {
		createTask(t, s, newTask(t, 1, tpl.ID, "many"))
	}
	for _, c := range []struct{ limit, want int }{
		{0, quan.DefaultPageSize},
		{quan.MaxPageSize + 1, quan.MaxPageSize},
		{1000, quan.MaxPageSize},
		{5, 5},
	} {
		ts, total := listTasks(t, s, quan.TaskFilter{ShopNo: 1, Limit: c.limit})
		if len(ts) != c.want || total != n {
			t.Errorf("Limit %d: got %d tasks, total %d; want %d, %d", c.limit, len(ts), total, c.want, n)
		}
	}
}

func testTasksEmpty(t *testing.T, s TaskStores) {
	for _, f := range []quan.TaskFilter{{ShopNo: 1}, {ShopNo: quan.AnyShop}, {ShopNo: 1, Status: quan.TaskRunning}} {
		ts, total, err := s.Tasks.Tasks(t.Context(), f)
		if err != nil || len(ts) != 0 || total != 0 {
			t.Errorf("Tasks(%+v) on an empty store = %d tasks, total %d, error %v; want none, 0, nil", f, len(ts), total, err)
		}
	}
}

func testUpdateTaskSaves(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	task := createTask(t, s, newTask(t, 1, tpl.ID, "updated"))
	now := base.Add(time.Hour)
	want := *getTask(t, s, task.ID)
	if err := want.Start(now); err != nil {
		t.Fatal(err)
	}
	want.BytesTotal = 12345
	want.Owner, want.LeaseUntil = "runner-b", now.Add(time.Minute)
	want.Notify = []quan.NotifyType{quan.NotifyPopup}

	for _, shop := range []int64{1, quan.AnyShop} {
		got, err := s.Tasks.UpdateTask(t.Context(), shop, task.ID, func(t *quan.Task) error {
			if t.Status == quan.TaskPending {
				if err := t.Start(now); err != nil {
					return err
				}
			}
			t.BytesTotal = 12345
			t.Owner, t.LeaseUntil = "runner-b", now.Add(time.Minute)
			t.Notify = []quan.NotifyType{quan.NotifyPopup}
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateTask(%d, %d): %v", shop, task.ID, err)
		}
		assertTask(t, got, &want)
		assertTask(t, getTask(t, s, task.ID), &want)
	}
}

// testUpdateTaskStalled: a running task's stall is stored with every
// field, read back by Task and Tasks, keeps its Since for another cause,
// and is gone once cleared or once the task ends.
func testUpdateTaskStalled(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	task := createTask(t, s, newTask(t, 1, tpl.ID, "stalled"))
	now := base.Add(time.Hour)
	update := func(fn func(*quan.Task)) *quan.Task {
		t.Helper()
		got, err := s.Tasks.UpdateTask(t.Context(), 1, task.ID, func(t *quan.Task) error { fn(t); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	update(func(t *quan.Task) { t.Start(now) })
	cache := quan.TaskStall{Code: quan.EUNAVAILABLE, Backend: quan.BackendCache, Reason: "the cache is down", Since: now.Add(time.Second)}
	want := *update(func(t *quan.Task) { t.Stall(cache) })
	if want.Stalled == nil {
		t.Fatal("Stall changed nothing on a running task")
	}
	assertTask(t, getTask(t, s, task.ID), &want)
	ts, _ := listTasks(t, s, quan.TaskFilter{ShopNo: 1})
	if len(ts) != 1 || ts[0].Stalled == nil || ts[0].Stalled.Backend != quan.BackendCache {
		t.Errorf("Tasks: %+v, want the stall", ts)
	}

	full := quan.TaskStall{Code: quan.ENOSPACE, Reason: "the disk is full", Since: now.Add(time.Minute)}
	got := update(func(t *quan.Task) { t.Stall(full) })
	if got.Stalled == nil || got.Stalled.Code != quan.ENOSPACE || got.Stalled.Backend != "" || !got.Stalled.Since.Equal(cache.Since) {
		t.Errorf("another cause: %+v, want %+v since %v", got.Stalled, full, cache.Since)
	}
	assertTask(t, getTask(t, s, task.ID), got)

	if got := update(func(t *quan.Task) { t.Stalled = nil }); got.Stalled != nil || getTask(t, s, task.ID).Stalled != nil {
		t.Errorf("cleared: %+v", getTask(t, s, task.ID).Stalled)
	}
	update(func(t *quan.Task) { t.Stall(cache) })
	if got := update(func(t *quan.Task) { t.Succeed(now.Add(time.Hour)) }); got.Stalled != nil || getTask(t, s, task.ID).Stalled != nil {
		t.Errorf("succeeded: still stalled %+v", getTask(t, s, task.ID).Stalled)
	}
}

func testUpdateTaskFnError(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	task := createTask(t, s, newTask(t, 1, tpl.ID, "unchanged"))
	want := getTask(t, s, task.ID)
	got, err := s.Tasks.UpdateTask(t.Context(), 1, task.ID, func(t *quan.Task) error {
		t.Name = "changed"
		t.Status = quan.TaskFailed
		return errRefused
	})
	if !errors.Is(err, errRefused) || got != nil {
		t.Fatalf("UpdateTask with a failing fn = %v, %v; want nil and fn's error", got, err)
	}
	assertTask(t, getTask(t, s, task.ID), want)

	// A domain error comes back as itself.
	_, err = s.Tasks.UpdateTask(t.Context(), 1, task.ID, func(t *quan.Task) error { return t.Succeed(base) })
	if !errors.Is(err, quan.ErrTransition) {
		t.Errorf("UpdateTask with Succeed on a pending task: error %v, want ErrTransition", err)
	}
	assertTask(t, getTask(t, s, task.ID), want)
}

func testUpdateTaskNotFound(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	task := createTask(t, s, newTask(t, 1, tpl.ID, "shop 1's"))
	want := getTask(t, s, task.ID)
	for _, c := range []struct{ shop, id int64 }{{2, task.ID}, {1, 999_999}, {quan.AnyShop, 999_999}} {
		_, err := s.Tasks.UpdateTask(t.Context(), c.shop, c.id, func(task *quan.Task) error {
			t.Errorf("fn called for task %d of shop %d", c.id, c.shop)
			return task.Cancel(base)
		})
		if !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("UpdateTask(%d, %d) error = %v, want ErrNotFound", c.shop, c.id, err)
		}
	}
	assertTask(t, getTask(t, s, task.ID), want)
}

// claim calls ClaimTask and fails the test on error.
func claim(t *testing.T, s TaskStores, owner string, now, lease time.Time) *quan.Task {
	t.Helper()
	task, err := s.Tasks.ClaimTask(t.Context(), owner, now, lease)
	if err != nil {
		t.Fatalf("ClaimTask(%s, %v): %v", owner, now, err)
	}
	return task
}

func testClaimNone(t *testing.T, s TaskStores) {
	now := base.Add(time.Hour)
	if got := claim(t, s, "runner-a", now, now.Add(time.Minute)); got != nil {
		t.Fatalf("ClaimTask on an empty store = task %d, want nil", got.ID)
	}

	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	later := newTask(t, 1, tpl.ID, "scheduled later")
	later.SendAt = now.Add(time.Second)
	createTask(t, s, later)
	for _, st := range []quan.TaskStatus{quan.TaskSucceeded, quan.TaskFailed, quan.TaskCanceled} {
		done := newTask(t, 1, tpl.ID, string(st))
		done.Status = st
		done.Owner, done.LeaseUntil = "runner-dead", now.Add(-time.Hour)
		createTask(t, s, done)
	}
	held := newTask(t, 1, tpl.ID, "held")
	held.Status, held.StartedAt = quan.TaskRunning, base
	held.Owner, held.LeaseUntil = "runner-b", now.Add(time.Second)
	createTask(t, s, held)

	if got := claim(t, s, "runner-a", now, now.Add(time.Minute)); got != nil {
		t.Fatalf("ClaimTask = task %d %q, want nil: nothing is due, done or free", got.ID, got.Name)
	}
}

func testClaimPending(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	now := base.Add(time.Hour)
	for _, sendAt := range []time.Time{{}, now.Add(-time.Minute), now} {
		task := newTask(t, 1, tpl.ID, "due")
		task.SendAt = sendAt
		dry := sendAt.IsZero()
		task.DryRun = dry
		createTask(t, s, task)

		want := *task
		want.Status, want.StartedAt, want.UpdatedAt = quan.TaskRunning, now, now
		want.Owner, want.LeaseUntil = "runner-a", now.Add(time.Minute)
		got := claim(t, s, "runner-a", now, now.Add(time.Minute))
		if got == nil {
			t.Fatalf("ClaimTask = nil; want the task sent at %v", sendAt)
		}
		assertTask(t, got, &want)
		assertTask(t, getTask(t, s, task.ID), &want)
	}
}

func testClaimNotYetDue(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	sendAt := base.Add(2 * time.Hour)
	task := newTask(t, 1, tpl.ID, "scheduled")
	task.SendAt = sendAt
	createTask(t, s, task)

	if got := claim(t, s, "runner-a", sendAt.Add(-time.Microsecond), sendAt.Add(time.Minute)); got != nil {
		t.Fatalf("ClaimTask before the send time = task %d, want nil", got.ID)
	}
	if got := getTask(t, s, task.ID); got.Status != quan.TaskPending || got.Owner != "" {
		t.Fatalf("an unclaimed task is %s, held by %q; want pending, unheld", got.Status, got.Owner)
	}
	got := claim(t, s, "runner-a", sendAt, sendAt.Add(time.Minute))
	if got == nil || got.ID != task.ID || got.Status != quan.TaskRunning || !got.StartedAt.Equal(sendAt) {
		t.Fatalf("ClaimTask at the send time = %+v; want task %d running since %v", got, task.ID, sendAt)
	}
}

func testClaimExpiredLease(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	now := base.Add(time.Hour)
	task := newTask(t, 1, tpl.ID, "orphaned")
	task.Status, task.StartedAt = quan.TaskRunning, base.Add(time.Minute)
	task.Owner, task.LeaseUntil = "runner-dead", now.Add(time.Second)
	task.ChunksDone, task.BytesRead = 3, 3000
	task.Counts = quan.TaskCounts{Rows: 30, Valid: 30, Issued: 30}
	createTask(t, s, task)

	// The lease still runs: nobody else may take the task.
	if got := claim(t, s, "runner-b", now, now.Add(time.Minute)); got != nil {
		t.Fatalf("ClaimTask during a live lease = task %d, want nil", got.ID)
	}

	later := now.Add(time.Minute)
	want := *task
	want.Owner, want.LeaseUntil, want.UpdatedAt = "runner-b", later.Add(time.Minute), later
	got := claim(t, s, "runner-b", later, later.Add(time.Minute))
	if got == nil {
		t.Fatal("ClaimTask after the lease ended = nil, want the orphaned task")
	}
	// Running still, since its first start, and from its checkpoint.
	assertTask(t, got, &want)
	assertTask(t, getTask(t, s, task.ID), &want)
}

func testClaimOrder(t *testing.T, s TaskStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "distributed"))
	now := base.Add(time.Hour)
	var want []int64
	for i := range 3 {
		task := newTask(t, int64(1+i%2), tpl.ID, fmt.Sprint("due ", i))
		task.SendAt = base.Add(time.Duration(i) * time.Minute) // oldest by id and by send time
		if i == 1 {
			task.Status, task.StartedAt = quan.TaskRunning, base
			task.Owner, task.LeaseUntil = "runner-dead", base.Add(time.Minute)
		}
		want = append(want, createTask(t, s, task).ID)
	}
	var got []int64
	for i := range 4 {
		owner := fmt.Sprint("runner-", i)
		task := claim(t, s, owner, now, now.Add(time.Hour))
		if task == nil {
			break
		}
		if task.Owner != owner || task.Status != quan.TaskRunning {
			t.Errorf("claimed task %d is %s held by %q, want running held by %q", task.ID, task.Status, task.Owner, owner)
		}
		got = append(got, task.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("claims returned tasks %v, want %v: oldest first, each once", got, want)
	}
}
