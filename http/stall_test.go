package http_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
)

// fullReportDisk is a FailureReport on a disk that is full until free is
// called.
type fullReportDisk struct {
	next  quan.FailureReport
	mu    sync.Mutex
	full  bool
	tries int
}

func (f *fullReportDisk) Write(ctx context.Context, path string, t *quan.Task, rows iter.Seq2[quan.Failure, error]) error {
	f.mu.Lock()
	full := f.full
	f.tries++
	f.mu.Unlock()
	if full {
		return fmt.Errorf("task %d: %w", t.ID, quan.NoSpace("the failure report", 0, 512, syscall.ENOSPC))
	}
	return f.next.Write(ctx, path, t, rows)
}

func (f *fullReportDisk) free() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full = false
}

func (f *fullReportDisk) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries
}

// TestTaskStalledOnAFullDisk: a task whose failure report does not fit
// stays running and says why (stalled: insufficient_storage, since when)
// while the runner tries again; once there is room it succeeds, and the
// stall is gone.
func TestTaskStalledOnAFullDisk(t *testing.T) {
	report := &fullReportDisk{full: true}
	ts := newServer(t, func(ts *testServer) {
		report.next = ts.runner.Report
		ts.runner.Report = report
	})
	tok := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	r := ts.upload(t, tok, map[string]string{"name": "stuck", "templateId": strconv.FormatInt(tpl.ID, 10)},
		"users.csv", []byte("userId\n1\nnot-a-user\n2\n"))
	r.want(t, http.StatusCreated, "")
	var task qhttp.TaskView
	r.decode(t, &task)

	stalled := ts.waitTaskState(t, tok, task.ID, func(v qhttp.TaskView) bool { return v.Stalled != nil && report.attempts() >= 2 })
	if stalled.Status != quan.TaskRunning || stalled.Stalled.Code != quan.ENOSPACE ||
		!strings.Contains(stalled.Stalled.Reason, "failure report") || !stalled.Stalled.Since.Equal(testNow) {
		t.Fatalf("stalled task: %s %+v, want running, stalled insufficient_storage since %v", stalled.Status, stalled.Stalled, testNow)
	}
	raw := ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), tok, nil)
	if !strings.Contains(string(raw.Body), `"stalled":{"code":"insufficient_storage"`) {
		t.Errorf("the task's JSON: %s", raw.Body)
	}

	stored, err := ts.store.Task(t.Context(), quan.AnyShop, task.ID)
	if err != nil || stored.Stalled == nil || stored.Stalled.Code != quan.ENOSPACE {
		t.Errorf("the store's task: %+v, %v; want the stall recorded for every process", stored, err)
	}

	report.free()
	done := ts.waitTask(t, tok, task.ID)
	if done.Status != quan.TaskSucceeded || done.Stalled != nil || done.Report == "" {
		t.Fatalf("once there is room: %s, stalled %+v, report %q", done.Status, done.Stalled, done.Report)
	}
}

// waitTaskState polls task id until ok holds of it.
func (ts *testServer) waitTaskState(t *testing.T, token string, id int64, ok func(qhttp.TaskView) bool) qhttp.TaskView {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var task qhttp.TaskView
		ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", id), token, nil).decode(t, &task)
		if ok(task) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d: not in the state awaited: %+v", id, task.Task)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readOnlyTasks is a task store that takes no writes of a task while on,
// as a demoted primary refuses them in a failover; reads go through.
type readOnlyTasks struct {
	quan.TaskStore
	mu sync.Mutex
	on bool
}

var errReadOnly = quan.Unavailable(quan.BackendStore, errors.New("Error 1290: the server is running with the --read-only option"))

func (r *readOnlyTasks) readOnly() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.on
}

func (r *readOnlyTasks) set(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = on
}

func (r *readOnlyTasks) UpdateTask(ctx context.Context, shop, id int64, fn func(*quan.Task) error) (*quan.Task, error) {
	if r.readOnly() {
		return nil, errReadOnly
	}
	return r.TaskStore.UpdateTask(ctx, shop, id, fn)
}

func (r *readOnlyTasks) ApplyChunk(ctx context.Context, c *quan.Chunk) (quan.TaskCounts, error) {
	if r.readOnly() {
		return quan.TaskCounts{}, errReadOnly
	}
	return r.TaskStore.ApplyChunk(ctx, c)
}

// TestTaskStalledOnTheStore: a task whose store takes no writes (a
// failover under way) shows it is stalled on the store, though the store
// cannot record it: the runner of the process says so. Once the store
// takes writes again, the task succeeds and the stall is gone.
func TestTaskStalledOnTheStore(t *testing.T) {
	store := &readOnlyTasks{on: true}
	ts := newServer(t, func(ts *testServer) {
		store.TaskStore = ts.runner.Store
		ts.runner.Store = store
	})
	tok := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	r := ts.upload(t, tok, map[string]string{"name": "read-only", "templateId": strconv.FormatInt(tpl.ID, 10)},
		"users.csv", []byte("userId\n1\n2\n"))
	r.want(t, http.StatusCreated, "")
	var task qhttp.TaskView
	r.decode(t, &task)

	stalled := ts.waitTaskState(t, tok, task.ID, func(v qhttp.TaskView) bool { return v.Stalled != nil })
	if stalled.Status != quan.TaskRunning || stalled.Stalled.Code != quan.EUNAVAILABLE || stalled.Stalled.Backend != quan.BackendStore ||
		!strings.Contains(stalled.Stalled.Reason, "store") {
		t.Fatalf("stalled task: %s %+v, want running, stalled unavailable of the store", stalled.Status, stalled.Stalled)
	}
	var list struct{ Items []qhttp.TaskView }
	ts.do(t, "GET", "/api/v1/tasks", tok, nil).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].Stalled == nil {
		t.Errorf("the task list: %+v, want the stall", list.Items)
	}

	store.set(false)
	done := ts.waitTask(t, tok, task.ID)
	if done.Status != quan.TaskSucceeded || done.Stalled != nil || done.Counts.Issued != 2 {
		t.Fatalf("once the store takes writes: %s, stalled %+v, %d issued", done.Status, done.Stalled, done.Counts.Issued)
	}
}
