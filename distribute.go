package quan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// FileRow is one data row of a distribution file as a RowReader gives it.
type FileRow struct {
	Line    int64
	UserID  string // as written
	Inexact bool   // a numeric cell beyond 2^53: the digits typed are lost
}

// RowReader streams the data rows of a distribution file in one pass.
type RowReader interface {
	// Read fills dst with the next rows: n > 0 and nil, or 0 and io.EOF
	// at the end, or 0 and an error that names what is wrong with the file.
	Read(dst []FileRow) (int, error)
	// Progress reports the bytes of the file's data consumed and in all.
	Progress() (read, total int64)
	Close() error
}

// FailureReport writes the failed rows of a task, in line order, as a file
// at path.
type FailureReport interface {
	Write(ctx context.Context, path string, t *Task, rows iter.Seq2[Failure, error]) error
}

// Distributor runs distribution tasks: it claims due tasks from the store,
// streams their files in chunks and applies each chunk atomically, so a
// task resumes after a crash without issuing twice.
//
// With no Bus, the runner that holds a task applies its chunks itself, in
// file order. With a Bus, it publishes them instead, and every process
// running ServeChunks (the runner's own included) applies what it is
// given, in whatever order; the runner waits until the store has applied
// every chunk, publishes again what went missing, and finishes the task.
//
// With a Cache, each chunk first reserves its stock and user counts in the
// cache under the key "task:T:chunk:N" (idempotent, so a redelivered chunk
// reserves nothing twice), then the store applies it. The store decides
// every row again and is the arbiter: where it decides otherwise than the
// cache, the cache was wrong (it lost its state, or missed a change made
// while it was loaded) and is loaded again from the store. A chunk whose
// task has ended gives its reservation back only if the store never
// applied it.
type Distributor struct {
	Store TaskStore
	// Templates and Coupons load a template and its holdings into the
	// Cache; both are needed when Cache is set.
	Templates TemplateStore
	Coupons   CouponStore
	Cache     Cache // nil: the store alone checks and reserves
	Bus       Bus   // nil: the runner applies its own chunks
	// Open opens the file of a task.
	Open func(ctx context.Context, t *Task) (RowReader, error)
	// Report writes failure reports; ReportPath names the file of a task.
	Report     FailureReport
	ReportPath func(t *Task) string

	Owner        string        // this runner's name, unique among runners
	Lease        time.Duration // how long a claim holds without renewal; 0 means 15s
	PollInterval time.Duration // how often to look for due tasks; 0 means 1s
	// Stall is how long a runner waits for published chunks while none is
	// applied before it publishes the missing ones again; 0 means 1 min.
	// After Republish such rounds (0 means 3) the task fails.
	Stall     time.Duration
	Republish int
	// AckWait is how long a worker may take over a chunk before the bus
	// presumes it dead and hands the chunk to another; 0 means
	// DefaultAckWait.
	AckWait time.Duration
	// ChunkConcurrency is how many chunks ServeChunks applies at once; 0
	// means 1. A store that plans chunks before it locks (MySQL) overlaps
	// them.
	ChunkConcurrency int
	Now              Clock
	Logger           *slog.Logger

	wakeOnce sync.Once
	wake     chan struct{}
}

func (d *Distributor) now() time.Time {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}

func (d *Distributor) lease() time.Duration {
	if d.Lease <= 0 {
		return 15 * time.Second
	}
	return d.Lease
}

func (d *Distributor) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

func (d *Distributor) wakeCh() chan struct{} {
	d.wakeOnce.Do(func() { d.wake = make(chan struct{}, 1) })
	return d.wake
}

// Wake tells Run that a task may be due now, sparing it a poll interval.
func (d *Distributor) Wake() {
	select {
	case d.wakeCh() <- struct{}{}:
	default:
	}
}

// Run claims and runs due tasks, one at a time, until ctx ends.
func (d *Distributor) Run(ctx context.Context) error {
	poll := d.PollInterval
	if poll <= 0 {
		poll = time.Second
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-d.wakeCh():
		}
		for {
			ran, err := d.RunOne(ctx)
			if err != nil && ctx.Err() == nil {
				d.logger().Error("distribution", "err", err)
			}
			if !ran || ctx.Err() != nil {
				break
			}
		}
		timer.Reset(poll)
	}
}

// RunOne claims one due task and runs it to its end. It reports whether
// there was a task.
func (d *Distributor) RunOne(ctx context.Context) (bool, error) {
	now := d.now()
	t, err := d.Store.ClaimTask(ctx, d.Owner, now, now.Add(d.lease()))
	if err != nil {
		return false, fmt.Errorf("claim task: %w", err)
	}
	if t == nil {
		return false, nil
	}
	return true, d.runTask(ctx, t)
}

// errLost says the runner lost its task: canceled, or taken over.
var errLost = errors.New("task lost")

// fileError is a problem with the task's file, which fails the task; any
// other error leaves it to be resumed.
type fileError struct{ err error }

func (e fileError) Error() string { return e.err.Error() }
func (e fileError) Unwrap() error { return e.err }

// runTask streams the task's file from the start, skipping the chunks the
// store has applied, and applies or publishes the rest; then it waits for
// every chunk to be applied and finishes the task.
func (d *Distributor) runTask(ctx context.Context, t *Task) error {
	log := d.logger().With("task", t.ID)
	if t.ChunksDone > 0 {
		log.Info("resuming task", "chunks_done", t.ChunksDone, "rows", t.Counts.Rows)
	} else {
		log.Info("starting task", "file", t.FileName, "dry_run", t.DryRun, "over_bus", d.Bus != nil)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The heartbeat keeps the lease while the task runs; losing it (the
	// task was canceled, or another runner took over) stops the run.
	lost := make(chan struct{})
	go d.heartbeat(ctx, t, lost)

	total, chunks, err := d.pass(ctx, t, 0, lost)
	if err == nil {
		err = d.recordTotal(ctx, t, chunks)
	}
	if err == nil && d.Bus != nil {
		err = d.await(ctx, t, lost)
	}
	var fe fileError
	switch {
	case errors.Is(err, errLost):
		return d.stopped(ctx, t)
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &fe):
		return d.fail(ctx, t, fe.err)
	case err != nil:
		return fmt.Errorf("task %d: %w", t.ID, err)
	}
	return d.finish(ctx, t, total)
}

// pass reads the task's file once and hands each chunk the store has not
// applied to the runner's sink: the store, or the bus (round names the
// publication, so that a later round is not taken for a duplicate). It
// returns the rows and chunks of the file.
func (d *Distributor) pass(ctx context.Context, t *Task, round int, lost <-chan struct{}) (rows, chunks int64, err error) {
	seqs, err := d.Store.AppliedChunks(ctx, t.ID)
	if err != nil {
		return 0, 0, err
	}
	applied := make(map[int64]bool, len(seqs))
	for _, s := range seqs {
		applied[s] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r, err := d.Open(ctx, t)
	if err != nil {
		return 0, 0, fileError{err}
	}
	if _, size := r.Progress(); size != t.BytesTotal {
		if _, err := d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
			cur.BytesTotal = size
			return nil
		}); err != nil {
			r.Close()
			return 0, 0, err
		}
		t.BytesTotal = size
	}
	readerDone := make(chan struct{})
	defer func() {
		cancel()
		<-readerDone // the reader is not safe to close while it reads
		r.Close()
	}()

	out := make(chan *Chunk, 2) // back-pressure: the reader waits for the sink
	var (
		readRows, readChunks int64
		readErr              error
	)
	go func() {
		defer close(readerDone)
		defer close(out)
		readRows, readChunks, readErr = d.readChunks(ctx, t, r, applied, out)
	}()
	for c := range out {
		select {
		case <-lost:
			return 0, 0, errLost
		default:
		}
		if err := d.sink(ctx, c, round); err != nil {
			return 0, 0, err
		}
	}
	<-readerDone
	if readErr != nil {
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		return 0, 0, fileError{readErr}
	}
	return readRows, readChunks, nil
}

// sink applies c, or publishes it when chunks travel over the bus.
func (d *Distributor) sink(ctx context.Context, c *Chunk, round int) error {
	c.Owner, c.Now = d.Owner, d.now()
	if d.Bus == nil {
		_, err := d.applyChunk(ctx, c)
		switch {
		case errors.Is(err, ErrLeaseLost):
			return errLost
		case errors.Is(err, ErrChunkApplied):
			return nil // by a runner this one took over from, a moment ago
		case err != nil:
			return fmt.Errorf("apply chunk %d: %w", c.Seq, err)
		}
		return nil
	}
	data, err := EncodeChunk(c)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("task-%d-chunk-%d", c.TaskID, c.Seq)
	if round > 0 {
		id += fmt.Sprintf("-round-%d", round)
	}
	if err := d.Bus.Publish(ctx, Message{Subject: ChunkSubject, ID: id, Data: data}); err != nil {
		return fmt.Errorf("publish chunk %d: %w", c.Seq, err)
	}
	return nil
}

// recordTotal records how many chunks the file has: the task is done when
// the store has applied that many.
func (d *Distributor) recordTotal(ctx context.Context, t *Task, chunks int64) error {
	_, err := d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
		if cur.Status != TaskRunning || cur.Owner != d.Owner {
			return ErrLeaseLost
		}
		cur.ChunksTotal = chunks
		return nil
	})
	if errors.Is(err, ErrLeaseLost) {
		return errLost
	}
	return err
}

// await waits until the store has applied every chunk of the task. When
// none is applied for Stall, it publishes the missing chunks again (a bus
// that lost them, a chunk dead-lettered after a long store outage), and
// after Republish such rounds it fails the task.
func (d *Distributor) await(ctx context.Context, t *Task, lost <-chan struct{}) error {
	stall := d.Stall
	if stall <= 0 {
		stall = time.Minute
	}
	rounds := d.Republish
	if rounds <= 0 {
		rounds = 3
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	done, since, round := int64(-1), time.Now(), 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-lost:
			return errLost
		case <-tick.C:
		}
		cur, err := d.Store.Task(ctx, AnyShop, t.ID)
		if err != nil {
			return err
		}
		if cur.Status != TaskRunning || cur.Owner != d.Owner {
			return errLost
		}
		if cur.ChunksDone >= cur.ChunksTotal {
			return nil
		}
		if cur.ChunksDone != done {
			done, since = cur.ChunksDone, time.Now()
			continue
		}
		if time.Since(since) < stall {
			continue
		}
		if round == rounds {
			return fileError{fmt.Errorf("%d of %d chunks were not applied after publishing the missing ones %d times; the workers' logs say why",
				cur.ChunksTotal-cur.ChunksDone, cur.ChunksTotal, rounds)}
		}
		round++
		d.logger().Warn("publishing missing chunks again", "task", t.ID, "round", round,
			"applied", cur.ChunksDone, "chunks", cur.ChunksTotal)
		if _, _, err := d.pass(ctx, t, round, lost); err != nil {
			return err
		}
		since = time.Now()
	}
}

// ServeChunks applies the chunks published on the bus, with whichever
// runner's task they belong to, until ctx ends.
func (d *Distributor) ServeChunks(ctx context.Context) error {
	if d.Bus == nil {
		return errors.New("serve chunks: no bus")
	}
	return d.Bus.Consume(ctx, ChunkSubject, ChunkDurable, ConsumeOptions{AckWait: d.AckWait, Concurrency: d.ChunkConcurrency}, d.handleChunk)
}

// handleChunk applies one chunk from the bus. A chunk applied before, or
// of a task no longer running, is done with; any other failure has the bus
// deliver it again.
func (d *Distributor) handleChunk(ctx context.Context, m Message) error {
	c, err := DecodeChunk(m.Data)
	if err != nil {
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	c.Now = d.now() // the template's window is checked when the chunk is applied
	n, err := d.applyChunk(ctx, c)
	switch {
	case errors.Is(err, ErrChunkApplied):
		d.logger().Debug("chunk applied before", "task", c.TaskID, "chunk", c.Seq, "attempt", m.Attempt)
		return nil
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotFound):
		d.logger().Info("chunk of a task not running", "task", c.TaskID, "chunk", c.Seq, "err", err)
		return nil
	case err != nil:
		d.logger().Warn("apply chunk", "task", c.TaskID, "chunk", c.Seq, "attempt", m.Attempt, "err", err)
		return err
	}
	d.logger().Debug("chunk applied", "task", c.TaskID, "chunk", c.Seq, "issued", n.Issued, "rows", n.Rows)
	return nil
}

// applyChunk has the store apply c, reserving in the cache first when
// there is one.
func (d *Distributor) applyChunk(ctx context.Context, c *Chunk) (TaskCounts, error) {
	if d.Cache == nil {
		return d.Store.ApplyChunk(ctx, c)
	}
	t, err := d.Store.Task(ctx, AnyShop, c.TaskID)
	if err != nil {
		return TaskCounts{}, err
	}
	key := fmt.Sprintf("task:%d:chunk:%d", c.TaskID, c.Seq)
	if t.Status != TaskRunning {
		return TaskCounts{}, d.release(ctx, c, t.TemplateID, key,
			Errorf(ELEASELOST, "task %d is %s, not running", t.ID, t.Status))
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
		return TaskCounts{}, fmt.Errorf("reserve chunk %d in the cache: %w", c.Seq, err)
	}
	// The store decides every row again, whatever the cache answered: the
	// cache keeps its counters in step with the store (for claims), but a
	// cache just rebuilt may not know of a change made while it was being
	// loaded, and a row must not go without a coupon the stock holds.
	n, err := d.Store.ApplyChunk(ctx, c)
	switch {
	case errors.Is(err, ErrChunkApplied):
		return n, err // its reservation is the one made the first time
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalid):
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

// reconcileIfEnded reconciles the cache with the store if task has ended.
// A reload reads the stock from the store before it replaces the cache,
// and other chunks of the task apply meanwhile, in other workers: if the
// last of them was applied and the runner finished the task and
// reconciled before this reload replaced the cache, the reload put back
// stock those chunks issued, and nothing would correct it. A task that
// ended before the reload was done is reconciled again, after it; one
// still running then will be reconciled by its runner later.
func (d *Distributor) reconcileIfEnded(ctx context.Context, task int64) {
	cur, err := d.Store.Task(ctx, AnyShop, task)
	if err != nil {
		d.logger().Warn("reconcile the cache", "task", task, "err", err)
		return
	}
	if cur.Status != TaskRunning {
		d.reconcile(ctx, cur)
	}
}

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
func (d *Distributor) release(ctx context.Context, c *Chunk, template int64, key string, cause error) error {
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

// reserve reserves users in the cache, first loading the template if the
// cache lacks it and correcting its rules if they changed in the store.
func (d *Distributor) reserve(ctx context.Context, template int64, key string, users []int64, now time.Time) ([]Refusal, error) {
	tpl, err := d.Templates.Template(ctx, AnyShop, template)
	if err != nil {
		return nil, err
	}
	st, err := d.Cache.State(ctx, template)
	switch {
	case errors.Is(err, ErrCacheCold):
		if _, err := d.Cache.Load(ctx, StateOf(tpl), d.Coupons.Holdings(ctx, tpl.ID)); err != nil {
			return nil, fmt.Errorf("load template %d into the cache: %w", tpl.ID, err)
		}
	case err != nil:
		return nil, err
	case !sameRules(st, StateOf(tpl)):
		if err := d.Cache.Update(ctx, StateOf(tpl), 0); err != nil && !errors.Is(err, ErrCacheCold) {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		refusals, err := d.Cache.Reserve(ctx, template, key, users, now)
		if !errors.Is(err, ErrCacheCold) || attempt == 2 {
			return refusals, err
		}
		// Lost since the check above (a Redis restart, a FLUSHALL).
		if _, err := d.Cache.Load(ctx, StateOf(tpl), d.Coupons.Holdings(ctx, template)); err != nil {
			return nil, fmt.Errorf("load template %d into the cache: %w", template, err)
		}
	}
}

// sameRules reports whether a and b agree on everything but the stock.
func sameRules(a, b TemplateState) bool {
	return a.ID == b.ID && a.ShopNo == b.ShopNo && a.Status == b.Status && a.PerUserLimit == b.PerUserLimit &&
		a.IssueStart.Equal(b.IssueStart) && a.IssueEnd.Equal(b.IssueEnd)
}

// prime loads template from the store into the cache.
func (d *Distributor) prime(ctx context.Context, template int64) error {
	tpl, err := d.Templates.Template(ctx, AnyShop, template)
	if err != nil {
		return err
	}
	return d.primeWith(ctx, tpl)
}

func (d *Distributor) primeWith(ctx context.Context, tpl *Template) error {
	start := time.Now()
	if err := d.Cache.Prime(ctx, StateOf(tpl), d.Coupons.Holdings(ctx, tpl.ID)); err != nil {
		return fmt.Errorf("load template %d into the cache: %w", tpl.ID, err)
	}
	d.logger().Info("cache loaded from the store", "template", tpl.ID, "stock", tpl.Stock, "took", time.Since(start))
	return nil
}

// reconcile makes the cache agree with the store on the stock of the
// task's template once the task has ended: they differ only if the cache
// lost its state or a reservation was never settled while it ran. (Work on
// the template still under way elsewhere shows as a difference too; the
// reload then costs time, never coupons.)
func (d *Distributor) reconcile(ctx context.Context, t *Task) {
	if d.Cache == nil || t.DryRun {
		return
	}
	tpl, err := d.Templates.Template(ctx, AnyShop, t.TemplateID)
	if err != nil {
		d.logger().Warn("reconcile the cache", "task", t.ID, "err", err)
		return
	}
	st, err := d.Cache.State(ctx, t.TemplateID)
	if err == nil && st.Stock == tpl.Stock {
		return
	}
	if err != nil && !errors.Is(err, ErrCacheCold) {
		d.logger().Warn("reconcile the cache", "task", t.ID, "err", err)
		return
	}
	if err == nil {
		d.logger().Info("cache and store differ on the stock; loading the cache from the store",
			"task", t.ID, "template", t.TemplateID, "cache", st.Stock, "store", tpl.Stock)
	}
	if err := d.primeWith(ctx, tpl); err != nil {
		d.logger().Warn("reconcile the cache", "task", t.ID, "err", err)
	}
}

// readChunks reads the file and sends chunks of ChunkSize rows, with each
// row's file check done: invalid ids and users named earlier in the file.
// Chunks the store has applied are read (to rebuild the set of users seen)
// but not sent. It returns the rows and chunks of the file.
func (d *Distributor) readChunks(ctx context.Context, t *Task, rows RowReader, applied map[int64]bool, out chan<- *Chunk) (int64, int64, error) {
	seen := newUserSet(1 << 16)
	buf := make([]FileRow, 1024)
	size := t.ChunkSize
	cur := &Chunk{TaskID: t.ID, Seq: 1, Rows: make([]ChunkRow, 0, size)}
	var n int64
	send := func() bool {
		read, _ := rows.Progress()
		cur.BytesRead = read
		if !applied[cur.Seq] {
			select {
			case out <- cur:
			case <-ctx.Done():
				return false
			}
			cur = &Chunk{TaskID: t.ID, Seq: cur.Seq + 1, Rows: make([]ChunkRow, 0, size)}
		} else {
			cur.Seq++
			cur.Rows = cur.Rows[:0]
		}
		return true
	}
	for {
		k, err := rows.Read(buf)
		for _, fr := range buf[:k] {
			r := ChunkRow{Line: fr.Line, Raw: clipRaw(fr.UserID)}
			switch id, ok := ParseUserID(fr.UserID); {
			case fr.Inexact:
				r.Cause = CauseInexactNumber
			case !ok:
				r.Cause = CauseInvalidID
			case !seen.add(id):
				r.Cause = CauseDuplicate
			default:
				r.UserID = id
			}
			cur.Rows = append(cur.Rows, r)
			n++
			if len(cur.Rows) == size && !send() {
				return n, 0, ctx.Err()
			}
		}
		if err == io.EOF {
			if len(cur.Rows) > 0 && !send() {
				return n, 0, ctx.Err()
			}
			return n, cur.Seq - 1, nil
		}
		if err != nil {
			return n, 0, err
		}
		if ctx.Err() != nil {
			return n, 0, ctx.Err()
		}
	}
}

func (d *Distributor) heartbeat(ctx context.Context, t *Task, lost chan<- struct{}) {
	tick := time.NewTicker(d.lease() / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, err := d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
			if cur.Status != TaskRunning || cur.Owner != d.Owner {
				return ErrLeaseLost
			}
			cur.LeaseUntil = d.now().Add(d.lease())
			return nil
		})
		if errors.Is(err, ErrLeaseLost) {
			close(lost)
			return
		}
		if err != nil && ctx.Err() == nil {
			d.logger().Warn("renew task lease", "task", t.ID, "err", err)
		}
	}
}

// stopped handles a run that lost its task. If the task was canceled, the
// file is read to the end to count the rows not reached.
func (d *Distributor) stopped(ctx context.Context, t *Task) error {
	cur, err := d.Store.Task(ctx, AnyShop, t.ID)
	if err != nil {
		return fmt.Errorf("task %d: %w", t.ID, err)
	}
	if cur.Status != TaskCanceled {
		d.logger().Info("task taken over by another runner", "task", t.ID, "status", cur.Status, "owner", cur.Owner)
		return nil
	}
	total, err := d.countRows(ctx, t)
	if err != nil {
		return fmt.Errorf("task %d: count canceled rows: %w", t.ID, err)
	}
	cur, err = d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
		cur.Counts.Canceled = max(0, total-cur.Counts.Rows)
		return nil
	})
	if err != nil {
		return fmt.Errorf("task %d: count canceled rows: %w", t.ID, err)
	}
	d.logger().Info("task canceled", "task", t.ID, "rows_not_reached", cur.Counts.Canceled)
	d.reconcile(ctx, cur)
	return d.writeReport(ctx, t.ID)
}

// countRows reads the task's file to its end and counts its data rows.
func (d *Distributor) countRows(ctx context.Context, t *Task) (int64, error) {
	r, err := d.Open(ctx, t)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	buf := make([]FileRow, 1024)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
	}
}

// fail ends the task with err's message as the reason a merchant sees.
func (d *Distributor) fail(ctx context.Context, t *Task, cause error) error {
	now := d.now()
	_, err := d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
		if cur.Owner != d.Owner {
			return ErrLeaseLost
		}
		return cur.Fail(cause.Error(), now)
	})
	if err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrTransition) {
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
func (d *Distributor) finish(ctx context.Context, t *Task, total int64) error {
	if err := d.writeReport(ctx, t.ID); err != nil {
		return err
	}
	d.reconcile(ctx, t)
	now := d.now()
	done, err := d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
		if cur.Owner != d.Owner {
			return ErrLeaseLost
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
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrTransition) {
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
func (d *Distributor) writeReport(ctx context.Context, id int64) error {
	t, err := d.Store.Task(ctx, AnyShop, id)
	if err != nil {
		return fmt.Errorf("task %d: %w", id, err)
	}
	if t.Counts.FailedTotal() == 0 || d.Report == nil {
		return nil
	}
	path := d.ReportPath(t)
	rows := func(yield func(Failure, error) bool) {
		var after int64
		for {
			page, err := d.Store.Failures(ctx, id, after, 10_000)
			if err != nil {
				yield(Failure{}, err)
				return
			}
			for _, f := range page {
				if !yield(f, nil) {
					return
				}
				after = f.Line
			}
			if len(page) < 10_000 {
				return
			}
		}
	}
	if err := d.Report.Write(ctx, path, t, rows); err != nil {
		return fmt.Errorf("task %d: write failure report: %w", id, err)
	}
	_, err = d.Store.UpdateTask(ctx, AnyShop, id, func(cur *Task) error {
		cur.ReportPath = path
		return nil
	})
	if err != nil {
		return fmt.Errorf("task %d: record failure report: %w", id, err)
	}
	return nil
}
