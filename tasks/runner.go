package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/userset"
)

// CacheChecker is told of a template whose cache must be checked against
// the store (reconcile.Reconciler).
type CacheChecker interface {
	// Check asks for template to be reconciled soon, minding the work in
	// flight.
	Check(template int64)
}

// Runner runs distribution tasks: it claims due tasks from the store,
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
type Runner struct {
	Store quan.TaskStore
	// Templates and Coupons load a template and its holdings into the
	// Cache; both are needed when Cache is set.
	Templates quan.TemplateStore
	Coupons   quan.CouponStore
	Cache     quan.Cache // nil: the store alone checks and reserves
	Bus       quan.Bus   // nil: the runner applies its own chunks
	// Open opens the file of a task.
	Open func(ctx context.Context, t *quan.Task) (quan.RowReader, error)
	// Report writes failure reports; ReportPath names the file of a task.
	Report     quan.FailureReport
	ReportPath func(t *quan.Task) string

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
	// Reconciler, if set, reconciles the cache with the store when a task
	// ends (Reconciler.Check), minding the claims and chunks in flight.
	// Without one the task's end loads the template from the store into
	// the cache if their stocks differ: right only when nothing else
	// reserves in that cache (a process that only distributes).
	Reconciler CacheChecker
	Now        quan.Clock
	Logger     *slog.Logger
	Counters   quan.DistributionCounters
	// Tracer, if set, runs a task under the trace of the request that
	// created it (Task.TraceParent): the chunks published carry it to
	// where they are applied. nil traces nothing.
	Tracer quan.Tracer
	// Rules, if set, holds the templates' eligibility rules, and Facts
	// the users' facts they are decided on (nil: every user's facts are
	// zero): a row the rule in force refuses fails CauseNotEligible
	// (screen).
	Rules quan.RuleSource
	Facts quan.FactsStore

	wakeOnce sync.Once
	wake     chan struct{}
	inflight atomic.Int64 // chunks being applied (InFlight)

	stallMu sync.Mutex
	stalls  map[int64]stallState // the tasks this runner holds that are stuck (runner_stall.go)
}

func (d *Runner) lease() time.Duration {
	if d.Lease <= 0 {
		return 15 * time.Second
	}
	return d.Lease
}

func (d *Runner) poll() time.Duration {
	if d.PollInterval <= 0 {
		return time.Second
	}
	return d.PollInterval
}

func (d *Runner) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

func (d *Runner) wakeCh() chan struct{} {
	d.wakeOnce.Do(func() { d.wake = make(chan struct{}, 1) })
	return d.wake
}

// Wake tells Run that a task may be due now, sparing it a poll interval.
func (d *Runner) Wake() {
	select {
	case d.wakeCh() <- struct{}{}:
	default:
	}
}

// Run claims and runs due tasks, one at a time, until ctx ends.
func (d *Runner) Run(ctx context.Context) error {
	poll := d.poll()
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
func (d *Runner) RunOne(ctx context.Context) (bool, error) {
	now := d.Now.UTC()
	t, err := d.Store.ClaimTask(ctx, d.Owner, now, now.Add(d.lease()))
	if err != nil {
		return false, fmt.Errorf("claim task: %w", err)
	}
	if t == nil {
		return false, nil
	}
	return true, d.runTask(ctx, t)
}

// PublishTimeout bounds the publication of one chunk: past it the task
// stalls, saying the bus is unavailable, and the chunk is published again.
const PublishTimeout = 5 * time.Second

// errLost says the runner lost its task: canceled, or taken over.
var errLost = errors.New("task lost")

// fileError is a problem with the task's file, which fails the task; any
// other error leaves it to be resumed.
type fileError struct{ err error }

func (e fileError) Error() string { return e.err.Error() }
func (e fileError) Unwrap() error { return e.err }

// runTask streams the task's file from the start, skipping the chunks the
// store has applied, and applies or publishes the rest; then it waits for
// every chunk to be applied and finishes the task. A step that fails for
// a reason other than the file (a backend down, a full disk) stalls the
// task and is tried again (retrying) for as long as the runner holds it.
func (d *Runner) runTask(ctx context.Context, t *quan.Task) error {
	log := d.logger().With("task", t.ID)
	if t.ChunksDone > 0 {
		log.Info("resuming task", "chunks_done", t.ChunksDone, "rows", t.Counts.Rows)
	} else {
		log.Info("starting task", "file", t.FileName, "dry_run", t.DryRun, "over_bus", d.Bus != nil)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d.Tracer != nil && t.TraceParent != "" {
		ctx = d.Tracer.WithTraceParent(ctx, t.TraceParent)
	}
	d.adopt(t)
	defer d.forget(t.ID)

	// The heartbeat keeps the lease while the task runs; losing it (the
	// task was canceled, or another runner took over) stops the run.
	lost := make(chan struct{})
	go d.heartbeat(ctx, t, lost)

	var file fileRead
	err := d.retrying(ctx, t, lost, func() error {
		read, err := d.pass(ctx, t, 0, lost)
		if err == nil {
			err = d.recordTotal(ctx, t, read)
		}
		file = read
		return err
	})
	if err == nil && d.Bus != nil {
		err = d.retrying(ctx, t, lost, func() error { return d.await(ctx, t, lost) })
	}
	if err == nil {
		err = d.retrying(ctx, t, lost, func() error { return d.finish(ctx, t, file.rows) })
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
	return nil
}

// fileRead is what a pass over a task's file found in it.
type fileRead struct {
	rows, chunks int64
	blank        int64 // blank rows among the data rows
}

// pass reads the task's file once and hands each chunk the store has not
// applied to the runner's sink: the store, or the bus (round names the
// publication, so that a later round is not taken for a duplicate). It
// returns what it found in the file.
func (d *Runner) pass(ctx context.Context, t *quan.Task, round int, lost <-chan struct{}) (fileRead, error) {
	seqs, err := d.Store.AppliedChunks(ctx, t.ID)
	if err != nil {
		return fileRead{}, err
	}
	applied := make(map[int64]bool, len(seqs))
	for _, s := range seqs {
		applied[s] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r, err := d.Open(ctx, t)
	if err != nil {
		return fileRead{}, fileError{err}
	}
	if _, size := r.Progress(); size != t.BytesTotal {
		if _, err := d.Store.UpdateTask(ctx, quan.AnyShop, t.ID, func(cur *quan.Task) error {
			cur.BytesTotal = size
			return nil
		}); err != nil {
			r.Close()
			return fileRead{}, err
		}
		t.BytesTotal = size
	}
	readerDone := make(chan struct{})
	defer func() {
		cancel()
		<-readerDone // the reader is not safe to close while it reads
		r.Close()
	}()

	out := make(chan *quan.Chunk, 2) // back-pressure: the reader waits for the sink
	var (
		read    fileRead
		readErr error
	)
	go func() {
		defer close(readerDone)
		defer close(out)
		read, readErr = d.readChunks(ctx, t, r, applied, out)
	}()
	for c := range out {
		select {
		case <-lost:
			return fileRead{}, errLost
		default:
		}
		if err := d.sink(ctx, c, round); err != nil {
			return fileRead{}, err
		}
	}
	<-readerDone
	if readErr != nil {
		if ctx.Err() != nil {
			return fileRead{}, ctx.Err()
		}
		return fileRead{}, fileError{readErr}
	}
	return read, nil
}

// sink applies c, or publishes it when chunks travel over the bus.
func (d *Runner) sink(ctx context.Context, c *quan.Chunk, round int) error {
	c.Owner, c.Now = d.Owner, d.Now.UTC()
	if d.Bus == nil {
		n, err := d.applyChunk(ctx, c)
		switch {
		case errors.Is(err, quan.ErrLeaseLost):
			return errLost
		case errors.Is(err, quan.ErrChunkApplied):
			d.Counters.ChunksRedelivered.Add(1)
			return nil // by a runner this one took over from, a moment ago
		case err != nil:
			d.Counters.ChunksFailed.Add(1)
			return fmt.Errorf("apply chunk %d: %w", c.Seq, err)
		}
		d.Counters.Applied(n, false)
		d.unstall(ctx, c.TaskID)
		return nil
	}
	data, err := quan.EncodeChunk(c)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("task-%d-chunk-%d", c.TaskID, c.Seq)
	if round > 0 {
		id += fmt.Sprintf("-round-%d", round)
	}
	// A bus that does not take the chunk in time stalls the task, which
	// says so and publishes again (the same ID: stored once) rather than
	// wait in silence.
	pctx, cancel := context.WithTimeout(ctx, PublishTimeout)
	defer cancel()
	if err := d.Bus.Publish(pctx, quan.Message{Subject: quan.ChunkSubject, ID: id, Data: data}); err != nil {
		return fmt.Errorf("publish chunk %d: %w", c.Seq, err)
	}
	d.unstall(ctx, c.TaskID)
	return nil
}

// recordTotal records how many chunks the file has (the task is done when
// the store has applied that many) and its blank rows.
func (d *Runner) recordTotal(ctx context.Context, t *quan.Task, file fileRead) error {
	_, err := d.Store.UpdateTask(ctx, quan.AnyShop, t.ID, func(cur *quan.Task) error {
		if cur.Status != quan.TaskRunning || cur.Owner != d.Owner {
			return quan.ErrLeaseLost
		}
		cur.ChunksTotal = file.chunks
		cur.Counts.Blank = file.blank
		return nil
	})
	if errors.Is(err, quan.ErrLeaseLost) {
		return errLost
	}
	return err
}

// await waits until the store has applied every chunk of the task. When
// none is applied for Stall, it publishes the missing chunks again (a bus
// that lost them, a chunk dead-lettered after a long store outage), and
// after Republish such rounds it fails the task.
func (d *Runner) await(ctx context.Context, t *quan.Task, lost <-chan struct{}) error {
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
		cur, err := d.Store.Task(ctx, quan.AnyShop, t.ID)
		if err != nil {
			return err
		}
		if cur.Status != quan.TaskRunning || cur.Owner != d.Owner {
			return errLost
		}
		if cur.ChunksDone >= cur.ChunksTotal {
			return nil
		}
		if cur.ChunksDone != done {
			if cur.Stalled != nil && done >= 0 {
				// The workers apply chunks again: whatever stalled them
				// (their stall, recorded by handleChunk) is over.
				d.clearStall(ctx, t.ID)
			}
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
		if _, err := d.pass(ctx, t, round, lost); err != nil {
			return err
		}
		since = time.Now()
	}
}

// readChunks reads the file and sends chunks of ChunkSize rows, with each
// row's file check done: invalid ids and users named earlier in the file.
// Chunks the store has applied are read (to rebuild the set of users seen)
// but not sent. It returns what it found in the file.
func (d *Runner) readChunks(ctx context.Context, t *quan.Task, rows quan.RowReader, applied map[int64]bool, out chan<- *quan.Chunk) (fileRead, error) {
	seen := userset.New(1 << 16)
	buf := make([]quan.FileRow, 1024)
	size := t.ChunkSize
	// The contact columns travel with the rows only when the store needs
	// them: the chunks of other tasks stay as small as before.
	contacts := slices.Contains(t.Notify, quan.NotifyEmail) || slices.Contains(t.Notify, quan.NotifySMS)
	cur := &quan.Chunk{TaskID: t.ID, Seq: 1, Rows: make([]quan.ChunkRow, 0, size)}
	var n, blank int64
	send := func() bool {
		read, _ := rows.Progress()
		cur.BytesRead = read
		if !applied[cur.Seq] {
			select {
			case out <- cur:
			case <-ctx.Done():
				return false
			}
			cur = &quan.Chunk{TaskID: t.ID, Seq: cur.Seq + 1, Rows: make([]quan.ChunkRow, 0, size)}
		} else {
			cur.Seq++
			cur.Rows = cur.Rows[:0]
		}
		return true
	}
	for {
		k, err := rows.Read(buf)
		for _, fr := range buf[:k] {
			blank += fr.BlankBefore
			r := quan.ChunkRow{Line: fr.Line, Raw: quan.ClipRaw(fr.UserID)}
			switch id, ok := quan.ParseUserID(fr.UserID); {
			case fr.Inexact:
				r.Cause = quan.CauseInexactNumber
			case !ok:
				r.Cause = quan.CauseInvalidID
			case !seen.Add(id):
				r.Cause = quan.CauseDuplicate
			default:
				r.UserID = id
				if contacts {
					if k := (quan.RowContact{Phone: quan.ClipContact(fr.Phone), Mail: quan.ClipContact(fr.Mail)}); k != (quan.RowContact{}) {
						r.Contact = &k
					}
				}
			}
			cur.Rows = append(cur.Rows, r)
			n++
			if len(cur.Rows) == size && !send() {
				return fileRead{}, ctx.Err()
			}
		}
		if err == io.EOF {
			if len(cur.Rows) > 0 && !send() {
				return fileRead{}, ctx.Err()
			}
			return fileRead{rows: n, chunks: cur.Seq - 1, blank: blank}, nil
		}
		if err != nil {
			return fileRead{}, err
		}
		if ctx.Err() != nil {
			return fileRead{}, ctx.Err()
		}
	}
}

func (d *Runner) heartbeat(ctx context.Context, t *quan.Task, lost chan<- struct{}) {
	tick := time.NewTicker(d.lease() / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, err := d.Store.UpdateTask(ctx, quan.AnyShop, t.ID, func(cur *quan.Task) error {
			if cur.Status != quan.TaskRunning || cur.Owner != d.Owner {
				return quan.ErrLeaseLost
			}
			cur.LeaseUntil = d.Now.UTC().Add(d.lease())
			return nil
		})
		if errors.Is(err, quan.ErrLeaseLost) {
			close(lost)
			return
		}
		if err != nil && ctx.Err() == nil {
			d.logger().Warn("renew task lease", "task", t.ID, "err", err)
		}
	}
}
