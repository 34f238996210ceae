package quan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
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
// task resumes from its checkpoint after a crash without issuing twice.
type Distributor struct {
	Store TaskStore
	// Open opens the file of a task.
	Open func(ctx context.Context, t *Task) (RowReader, error)
	// Report writes failure reports; ReportPath names the file of a task.
	Report     FailureReport
	ReportPath func(t *Task) string

	Owner        string        // this runner's name, unique among runners
	Lease        time.Duration // how long a claim holds without renewal; 0 means 15s
	PollInterval time.Duration // how often to look for due tasks; 0 means 1s
	Now          Clock
	Logger       *slog.Logger

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

// runTask streams the task's file from the start, skipping the chunks its
// checkpoint shows applied, and applies the rest.
func (d *Distributor) runTask(ctx context.Context, t *Task) error {
	log := d.logger().With("task", t.ID)
	if t.ChunksDone > 0 {
		log.Info("resuming task", "chunks_done", t.ChunksDone, "rows", t.Counts.Rows)
	} else {
		log.Info("starting task", "file", t.FileName, "dry_run", t.DryRun)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The heartbeat keeps the lease while the task runs; losing it (the
	// task was canceled, or another runner took over) stops the run.
	lost := make(chan struct{})
	go d.heartbeat(ctx, t, lost)

	rows, err := d.Open(ctx, t)
	if err != nil {
		return d.fail(ctx, t, err)
	}
	if _, total := rows.Progress(); total != t.BytesTotal {
		_, err := d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
			cur.BytesTotal = total
			return nil
		})
		if err != nil {
			rows.Close()
			return fmt.Errorf("task %d: %w", t.ID, err)
		}
	}
	readerDone := make(chan struct{})
	defer func() {
		cancel()
		<-readerDone // the reader is not safe to close while it reads
		rows.Close()
	}()

	chunks := make(chan *Chunk, 2) // back-pressure: the reader waits for the store
	readErr := make(chan error, 1)
	counted := make(chan int64, 1) // rows read in all, once the file is done
	go func() {
		defer close(readerDone)
		n, err := d.readChunks(ctx, t, rows, chunks)
		counted <- n
		readErr <- err
		close(chunks)
	}()

	for c := range chunks {
		select {
		case <-lost:
			return d.stopped(ctx, t, chunks, counted)
		default:
		}
		c.Owner, c.Now = d.Owner, d.now()
		if _, err := d.Store.ApplyChunk(ctx, c); err != nil {
			if errors.Is(err, ErrLeaseLost) {
				return d.stopped(ctx, t, chunks, counted)
			}
			cancel()
			return fmt.Errorf("task %d: apply chunk %d: %w", t.ID, c.Seq, err)
		}
	}
	total := <-counted
	if err := <-readErr; err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return d.fail(ctx, t, err)
	}
	return d.finish(ctx, t, total)
}

// readChunks reads the file and sends chunks of ChunkSize rows, with each
// row's file check done: invalid ids and users named earlier in the file.
// Chunks up to the checkpoint are read (to rebuild the set of users seen)
// but not sent. It returns the number of rows read.
func (d *Distributor) readChunks(ctx context.Context, t *Task, rows RowReader, out chan<- *Chunk) (int64, error) {
	seen := newUserSet(1 << 16)
	buf := make([]FileRow, 1024)
	size := t.ChunkSize
	cur := &Chunk{TaskID: t.ID, Seq: 1, Rows: make([]ChunkRow, 0, size)}
	var n int64
	send := func() bool {
		read, _ := rows.Progress()
		cur.BytesRead = read
		if cur.Seq > t.ChunksDone {
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
			r := ChunkRow{Line: fr.Line, Raw: fr.UserID}
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
				return n, ctx.Err()
			}
		}
		if err == io.EOF {
			if len(cur.Rows) > 0 && !send() {
				return n, ctx.Err()
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
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
// rest of the file is read to count the rows not reached.
func (d *Distributor) stopped(ctx context.Context, t *Task, chunks <-chan *Chunk, counted <-chan int64) error {
	cur, err := d.Store.Task(ctx, AnyShop, t.ID)
	if err != nil {
		return fmt.Errorf("task %d: %w", t.ID, err)
	}
	if cur.Status != TaskCanceled {
		d.logger().Info("task taken over by another runner", "task", t.ID, "status", cur.Status, "owner", cur.Owner)
		return nil
	}
	for range chunks { // drain: the reader counts every row
	}
	total := <-counted
	_, err = d.Store.UpdateTask(ctx, AnyShop, t.ID, func(cur *Task) error {
		cur.Counts.Canceled = max(0, total-cur.Counts.Rows)
		return nil
	})
	if err != nil {
		return fmt.Errorf("task %d: count canceled rows: %w", t.ID, err)
	}
	d.logger().Info("task canceled", "task", t.ID, "rows_not_reached", max(0, total-cur.Counts.Rows))
	return d.writeReport(ctx, t.ID)
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
	return nil
}

// finish writes the failure report and marks the task succeeded, after
// checking that every row has exactly one outcome.
func (d *Distributor) finish(ctx context.Context, t *Task, total int64) error {
	if err := d.writeReport(ctx, t.ID); err != nil {
		return err
	}
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
		if c.Rows != total || c.Rows != decided+c.FailedTotal() {
			// A bug, never the merchant's doing: say so rather than succeed.
			return cur.Fail(fmt.Sprintf("internal error: outcomes do not add up: %d rows in the file, %d counted, %d issued, %d valid, %d failed",
				total, c.Rows, c.Issued, c.Valid, c.FailedTotal()), now)
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
