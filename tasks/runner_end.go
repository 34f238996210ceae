package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/quanhq/quan"
)

// stopped handles a run that lost its task. If the task was canceled, the
// file is read to the end to count the rows not reached.
func (d *Runner) stopped(ctx context.Context, t *quan.Task) error {
	cur, err := d.Store.Task(ctx, quan.AnyShop, t.ID)
	if err != nil {
		return fmt.Errorf("task %d: %w", t.ID, err)
	}
	if cur.Status != quan.TaskCanceled {
		d.Counters.LeasesLost.Add(1)
		d.logger().Info("task taken over by another runner", "task", t.ID, "status", cur.Status, "owner", cur.Owner)
		return nil
	}
	file, err := d.countRows(ctx, t)
	if err != nil {
		return fmt.Errorf("task %d: count canceled rows: %w", t.ID, err)
	}
	cur, err = d.Store.UpdateTask(ctx, quan.AnyShop, t.ID, func(cur *quan.Task) error {
		cur.Counts.Canceled = max(0, file.rows-cur.Counts.Rows)
		cur.Counts.Blank = file.blank
		return nil
	})
	if err != nil {
		return fmt.Errorf("task %d: count canceled rows: %w", t.ID, err)
	}
	d.logger().Info("task canceled", "task", t.ID, "rows_not_reached", cur.Counts.Canceled)
	d.reconcile(ctx, cur)
	return d.writeReport(ctx, t.ID)
}

// countRows reads the task's file to its end and counts its data rows
// and blank rows.
func (d *Runner) countRows(ctx context.Context, t *quan.Task) (fileRead, error) {
	r, err := d.Open(ctx, t)
	if err != nil {
		return fileRead{}, err
	}
	defer r.Close()
	buf := make([]quan.FileRow, 1024)
	var file fileRead
	for {
		k, err := r.Read(buf)
		file.rows += int64(k)
		for _, fr := range buf[:k] {
			file.blank += fr.BlankBefore
		}
		if err == io.EOF {
			return file, nil
		}
		if err != nil {
			return file, err
		}
		if err := ctx.Err(); err != nil {
			return file, err
		}
	}
}

// fail ends the task with err's message as the reason a merchant sees.
func (d *Runner) fail(ctx context.Context, t *quan.Task, cause error) error {
	now := d.Now.UTC()
	_, err := d.Store.UpdateTask(ctx, quan.AnyShop, t.ID, func(cur *quan.Task) error {
		if cur.Owner != d.Owner {
			return quan.ErrLeaseLost
		}
		return cur.Fail(cause.Error(), now)
	})
	if err != nil && !errors.Is(err, quan.ErrLeaseLost) && !errors.Is(err, quan.ErrTransition) {
		return fmt.Errorf("task %d: record failure %q: %w", t.ID, cause, err)
	}
	d.logger().Warn("task failed", "task", t.ID, "reason", cause)
	d.reconcile(ctx, t)
	return nil
}

// finish writes the failure report and marks the task succeeded, after
// checking that every row has exactly one outcome. The cache is
// reconciled before (every chunk is applied: a task shown succeeded has
// the cache agree with the store, unless a worker's reload of it is still
// under way) and after (such a reload done before the task was marked is
// undone; one done after reconciles itself, see reconcileIfEnded).
func (d *Runner) finish(ctx context.Context, t *quan.Task, total int64) error {
	if err := d.writeReport(ctx, t.ID); err != nil {
		return err
	}
	d.reconcile(ctx, t)
	now := d.Now.UTC()
	done, err := d.Store.UpdateTask(ctx, quan.AnyShop, t.ID, func(cur *quan.Task) error {
		if cur.Owner != d.Owner {
			return quan.ErrLeaseLost
		}
		c := cur.Counts
		decided := c.Issued
		if cur.DryRun {
			decided = c.Valid
		}
		if c.Rows != total || c.Rows != decided+c.FailedTotal() || cur.ChunksDone != cur.ChunksTotal {
			// A bug, never the merchant's doing: say so rather than succeed.
			return cur.Fail(fmt.Sprintf("internal error: outcomes do not add up: %d rows in the file, %d counted, %d issued, %d valid, %d failed, %d of %d chunks applied",
				total, c.Rows, c.Issued, c.Valid, c.FailedTotal(), cur.ChunksDone, cur.ChunksTotal), now)
		}
		cur.BytesRead = cur.BytesTotal
		return cur.Succeed(now)
	})
	if errors.Is(err, quan.ErrLeaseLost) || errors.Is(err, quan.ErrTransition) {
		return nil // canceled or taken over at the last moment
	}
	if err != nil {
		return fmt.Errorf("task %d: finish: %w", t.ID, err)
	}
	d.reconcile(ctx, done)
	d.logger().Info("task succeeded", "task", t.ID, "rows", done.Counts.Rows, "issued", done.Counts.Issued, "failed", done.Counts.FailedTotal())
	return nil
}

// writeReport writes the failure report of a task that has failures and
// records its path.
func (d *Runner) writeReport(ctx context.Context, id int64) error {
	t, err := d.Store.Task(ctx, quan.AnyShop, id)
	if err != nil {
		return fmt.Errorf("task %d: %w", id, err)
	}
	if t.Counts.FailedTotal() == 0 || d.Report == nil {
		return nil
	}
	path := d.ReportPath(t)
	rows := quan.FailureRows(ctx, d.Store, id)
	if err := d.Report.Write(ctx, path, t, rows); err != nil {
		return fmt.Errorf("task %d: write failure report: %w", id, err)
	}
	_, err = d.Store.UpdateTask(ctx, quan.AnyShop, id, func(cur *quan.Task) error {
		cur.ReportPath = path
		return nil
	})
	if err != nil {
		return fmt.Errorf("task %d: record failure report: %w", id, err)
	}
	return nil
}

// Release gives up the leases of the running tasks this runner holds, for
// a runner that stops before they end (a command interrupted by Ctrl-C):
// the next runner resumes them at once rather than when the lease runs
// out. Call it once Run or RunOne has returned. It returns the tasks
// released, as they are now.
func (d *Runner) Release(ctx context.Context) ([]*quan.Task, error) {
	var released []*quan.Task
	for offset := 0; ; offset += quan.MaxPageSize {
		page, _, err := d.Store.Tasks(ctx, quan.TaskFilter{ShopNo: quan.AnyShop, Status: quan.TaskRunning, Offset: offset, Limit: quan.MaxPageSize})
		if err != nil {
			return released, fmt.Errorf("release tasks: %w", err)
		}
		for _, t := range page {
			if t.Owner != d.Owner {
				continue
			}
			cur, err := d.Store.UpdateTask(ctx, quan.AnyShop, t.ID, func(cur *quan.Task) error {
				if cur.Owner != d.Owner || cur.Status != quan.TaskRunning {
					return quan.ErrLeaseLost
				}
				cur.LeaseUntil = d.Now.UTC()
				return nil
			})
			switch {
			case errors.Is(err, quan.ErrLeaseLost):
			case err != nil:
				return released, fmt.Errorf("release task %d: %w", t.ID, err)
			default:
				d.logger().Info("task released", "task", t.ID, "chunks_done", cur.ChunksDone)
				released = append(released, cur)
			}
		}
		if len(page) < quan.MaxPageSize {
			return released, nil
		}
	}
}
