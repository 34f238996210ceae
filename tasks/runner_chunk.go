package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/quanhq/quan"
)

// ServeChunks applies the chunks published on the bus, with whichever
// runner's task they belong to, until ctx ends.
func (d *Runner) ServeChunks(ctx context.Context) error {
	if d.Bus == nil {
		return errors.New("serve chunks: no bus")
	}
	return d.Bus.Consume(ctx, quan.ChunkSubject, quan.ChunkDurable, quan.ConsumeOptions{AckWait: d.AckWait, Concurrency: d.ChunkConcurrency}, d.handleChunk)
}

// handleChunk applies one chunk from the bus. A chunk applied before, or
// of a task no longer running, is done with; any other failure has the bus
// deliver it again.
func (d *Runner) handleChunk(ctx context.Context, m quan.Message) error {
	c, err := quan.DecodeChunk(m.Data)
	if err != nil {
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	c.Now = d.Now.UTC() // the template's window is checked when the chunk is applied
	n, err := d.applyChunk(ctx, c)
	switch {
	case errors.Is(err, quan.ErrChunkApplied):
		d.Counters.ChunksRedelivered.Add(1)
		d.logger().Debug("chunk applied before", "task", c.TaskID, "chunk", c.Seq, "attempt", m.Attempt)
		return nil
	case errors.Is(err, quan.ErrLeaseLost), errors.Is(err, quan.ErrNotFound):
		// Not counted: the task ended (or went) before its chunk came.
		d.logger().Info("chunk of a task not running", "task", c.TaskID, "chunk", c.Seq, "err", err)
		return nil
	case err != nil:
		d.Counters.ChunksFailed.Add(1)
		d.logger().Warn("apply chunk", "task", c.TaskID, "chunk", c.Seq, "attempt", m.Attempt, "err", err)
		if code := quan.ErrorCode(err); code == quan.EUNAVAILABLE || code == quan.ENOSPACE {
			// The task's runner, waiting for its chunks, cannot see why
			// they do not come: the task says so, if the store takes it,
			// until the runner sees chunks applied again (await).
			s := quan.StallOf(err, d.Now.UTC())
			d.recordStall(ctx, c.TaskID, &s)
		}
		return err
	}
	d.Counters.Applied(n, m.Attempt > 1)
	d.logger().Debug("chunk applied", "task", c.TaskID, "chunk", c.Seq, "issued", n.Issued, "rows", n.Rows)
	return nil
}

// applyChunk has the store apply c, reserving in the cache first when
// there is one.
func (d *Runner) applyChunk(ctx context.Context, c *quan.Chunk) (quan.TaskCounts, error) {
	d.inflight.Add(1)
	defer d.inflight.Add(-1)
	if d.Cache == nil {
		if err := d.screen(ctx, c, 0); err != nil {
			return quan.TaskCounts{}, err
		}
		return d.Store.ApplyChunk(ctx, c)
	}
	t, err := d.Store.Task(ctx, quan.AnyShop, c.TaskID)
	if err != nil {
		return quan.TaskCounts{}, err
	}
	if err := d.screen(ctx, c, t.TemplateID); err != nil {
		return quan.TaskCounts{}, err
	}
	key := fmt.Sprintf("task:%d:chunk:%d", c.TaskID, c.Seq)
	if t.Status != quan.TaskRunning {
		return quan.TaskCounts{}, d.release(ctx, c, t.TemplateID, key,
			quan.Errorf(quan.ELEASELOST, "task %d is %s, not running", t.ID, t.Status))
	}
	if t.DryRun {
		return d.Store.ApplyChunk(ctx, c) // a dry run tries no stock
	}
	var (
		users []int64
		rows  []int // users[i] is on c.Rows[rows[i]]
	)
	for i, r := range c.Rows {
		if r.Cause == "" {
			users, rows = append(users, r.UserID), append(rows, i)
		}
	}
	refusals, err := d.reserve(ctx, t.TemplateID, key, users, c.Now)
	if err != nil {
		return quan.TaskCounts{}, fmt.Errorf("reserve chunk %d in the cache: %w", c.Seq, err)
	}
	// The store decides every row again, whatever the cache answered: the
	// cache keeps its counters in step with the store (for claims), but a
	// cache just rebuilt may not know of a change made while it was being
	// loaded, and a row must not go without a coupon the stock holds.
	n, err := d.Store.ApplyChunk(ctx, c)
	switch {
	case errors.Is(err, quan.ErrChunkApplied):
		return n, err // its reservation is the one made the first time
	case errors.Is(err, quan.ErrLeaseLost), errors.Is(err, quan.ErrNotFound), errors.Is(err, quan.ErrInvalid):
		return n, d.release(ctx, c, t.TemplateID, key, err)
	case err != nil:
		// Kept: the chunk is applied again later, and reserves again under
		// the same key without taking anything twice.
		return n, err
	}
	missed := 0
	for i, why := range refusals {
		if (why == "") != (c.Rows[rows[i]].Cause == "") {
			missed++
		}
	}
	if missed > 0 {
		d.logger().Warn("cache and store decided rows differently; loading the cache from the store",
			"task", c.TaskID, "chunk", c.Seq, "rows", missed)
		if err := d.prime(ctx, t.TemplateID); err != nil {
			d.logger().Error("reload the cache", "template", t.TemplateID, "err", err)
		}
		d.reconcileIfEnded(ctx, c.TaskID)
	}
	return n, nil
}

// InFlight returns how many chunks this process is applying: reserved in
// the cache, perhaps, and not yet in the store (see Reconciler).
func (d *Runner) InFlight() int64 { return d.inflight.Load() }

// release gives back the reservation of c under key, unless the store
// applied c, and returns cause. It is called once the store will never
// apply c: its task is not running (an ended task applies no more
// chunks), is gone, or c is invalid; the ledger then says for good whether
// c's coupons were issued. A chunk applied before its task ended and
// delivered again after (its acknowledgement lost with a killed worker or
// a restarted bus, or published again by a stalled runner) keeps its
// reservation: the store's stock holds its coupons. If the ledger cannot
// be read, the reservation stays: the cache then holds less stock than
// the store until it is reconciled, never more.
func (d *Runner) release(ctx context.Context, c *quan.Chunk, template int64, key string, cause error) error {
	applied, err := d.Store.AppliedChunks(ctx, c.TaskID)
	if err != nil {
		return fmt.Errorf("%w (and its reservation stays: reading whether the chunk was applied failed: %v)", cause, err)
	}
	if _, ok := slices.BinarySearch(applied, c.Seq); ok {
		return cause
	}
	if err := d.Cache.Release(ctx, template, key); err != nil {
		return fmt.Errorf("%w (and releasing its reservation failed: %v)", cause, err)
	}
	return cause
}
