package quan_test

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestTaskStall: a running task records a stall once, keeping when it got
// stuck while it stays stuck, whatever the cause; a task not running
// records none, and ending a task clears it.
func TestTaskStall(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := &quan.Task{ID: 1, Status: quan.TaskRunning}
	cache := quan.StallOf(quan.Unavailable(quan.BackendCache, nil), t0)
	if !task.Stall(cache) || task.Stalled == nil || task.Stalled.Backend != "cache" || !task.Stalled.Since.Equal(t0) {
		t.Fatalf("first stall: %+v", task.Stalled)
	}
	if task.Stall(quan.StallOf(quan.Unavailable(quan.BackendCache, nil), t0.Add(time.Minute))) {
		t.Fatal("the same stall again changed the task")
	}
	if !task.Stall(quan.StallOf(quan.NoSpace("the failure report", 0, 0, nil), t0.Add(2*time.Minute))) ||
		task.Stalled.Code != quan.ENOSPACE || !task.Stalled.Since.Equal(t0) {
		t.Fatalf("another cause: %+v", task.Stalled)
	}
	if err := task.Succeed(t0.Add(time.Hour)); err != nil || task.Stalled != nil {
		t.Fatalf("succeeded: %v, stalled %+v", err, task.Stalled)
	}
	if task.Stall(cache) {
		t.Fatal("a finished task was stalled")
	}
}
