package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/quanhq/quan"
)

// stallState is what a runner knows of a task it holds that is stuck: the
// stall, and whether the store has it (Task.Stalled) for other processes
// to show.
type stallState struct {
	quan.TaskStall
	stored bool
}

// errUnchanged tells UpdateTask that its function changed nothing, so
// nothing is written.
var errUnchanged = errors.New("unchanged")

// Stalled returns why task id, which this runner holds, is stuck while
// the runner tries again, if it is: the stall as of the last attempt,
// which the store may not have been able to record (the store is what is
// down, or its disk is full). Service.Stalls shows it.
func (d *Runner) Stalled(id int64) (quan.TaskStall, bool) {
	d.stallMu.Lock()
	defer d.stallMu.Unlock()
	s, ok := d.stalls[id]
	return s.TaskStall, ok
}

// retrying runs step until it succeeds or fails for good: the task lost,
// a fault of its file, ctx ended. Any other error (a backend down, a full
// disk, anything unforeseen) stalls the task: the runner records why
// (stall) and runs step again after a pause that doubles from
// PollInterval to ten of them, holding the task meanwhile. Progress
// within step (unstall), or step's success, clears the stall.
func (d *Runner) retrying(ctx context.Context, t *quan.Task, lost <-chan struct{}, step func() error) error {
	wait := d.poll()
	for attempt := 1; ; attempt++ {
		err := step()
		var fe fileError
		if err == nil && attempt > 1 {
			d.unstall(ctx, t.ID)
		}
		if err == nil || errors.Is(err, errLost) || errors.As(err, &fe) || ctx.Err() != nil {
			return err
		}
		d.stall(ctx, t.ID, err)
		d.logger().Warn("task stalled; trying again", "task", t.ID, "attempt", attempt, "after", wait,
			"code", quan.ErrorCode(err), "backend", quan.ErrorBackend(err), "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-lost:
			return errLost
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*d.poll())
	}
}

// stall records that task id is stuck on err: in the runner (Stalled) and,
// if the store takes it, on the task for every process to show. A task
// stuck already keeps its Since.
func (d *Runner) stall(ctx context.Context, id int64, err error) {
	s := quan.StallOf(err, d.Now.UTC())
	d.stallMu.Lock()
	if d.stalls == nil {
		d.stalls = map[int64]stallState{}
	}
	cur, had := d.stalls[id]
	if had {
		s.Since = cur.Since
	}
	same := had && cur.Code == s.Code && cur.Backend == s.Backend && cur.Reason == s.Reason
	d.stalls[id] = stallState{TaskStall: s, stored: same && cur.stored}
	d.stallMu.Unlock()
	if same && cur.stored {
		return
	}
	if d.recordStall(ctx, id, &s) == nil {
		d.stallMu.Lock()
		if now, ok := d.stalls[id]; ok && now.TaskStall == s {
			now.stored = true
			d.stalls[id] = now
		}
		d.stallMu.Unlock()
	}
}

// recordStall writes s on running task id in the store (nil clears it).
// The store may be what is down: the error is logged at debug, and the
// runner's own record (Stalled) still shows the stall in this process.
func (d *Runner) recordStall(ctx context.Context, id int64, s *quan.TaskStall) error {
	_, err := d.Store.UpdateTask(ctx, quan.AnyShop, id, func(cur *quan.Task) error {
		if s == nil {
			if cur.Stalled == nil {
				return errUnchanged
			}
			cur.Stalled = nil
			return nil
		}
		if !cur.Stall(*s) {
			return errUnchanged
		}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		d.logger().Debug("record the stall of a task", "task", id, "err", err)
		return err
	}
	return nil
}

// unstall clears the stall of task id, which moved on: in the store, then
// in the runner. It costs nothing for a task this runner does not know
// stuck. If the store cannot clear it, the runner's record stays until
// the next progress does.
func (d *Runner) unstall(ctx context.Context, id int64) {
	d.stallMu.Lock()
	_, ok := d.stalls[id]
	d.stallMu.Unlock()
	if ok {
		d.clearStall(ctx, id)
	}
}

// clearStall clears the stall of task id in the store and, if that
// worked, in the runner.
func (d *Runner) clearStall(ctx context.Context, id int64) {
	if d.recordStall(ctx, id, nil) != nil {
		return
	}
	d.stallMu.Lock()
	_, had := d.stalls[id]
	delete(d.stalls, id)
	d.stallMu.Unlock()
	if had {
		d.logger().Info("task moves on again", "task", id)
	}
}

// forget drops the runner's record of task id's stall, as its run ends:
// the task ended (which clears Task.Stalled), or another runner has it.
func (d *Runner) forget(id int64) {
	d.stallMu.Lock()
	delete(d.stalls, id)
	d.stallMu.Unlock()
}

// adopt takes over the stall t had when this runner claimed it, so that
// the first progress clears it from the store.
func (d *Runner) adopt(t *quan.Task) {
	if t.Stalled == nil {
		return
	}
	d.stallMu.Lock()
	if d.stalls == nil {
		d.stalls = map[int64]stallState{}
	}
	d.stalls[t.ID] = stallState{TaskStall: *t.Stalled, stored: true}
	d.stallMu.Unlock()
}
