package quantest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/tasks"
)

// Backends are the engines a shared distribution runs on: a store, a cache
// and a bus that the processes of a deployment share.
type Backends struct {
	TaskStores
	Cache quan.Cache
	Bus   quan.Bus
}

// TestDistribution runs distributions whose chunks travel over b.Bus and
// reserve in b.Cache, applied by two Distributors as two worker processes
// would: every row gets exactly one outcome, no coupon is issued twice and
// the cache and the store agree on the stock at the end. newBackends
// returns fresh backends for each subtest (a bus with streams of its own);
// the subtests run one after another, since they share the bus's durable
// consumer name.
func TestDistribution(t *testing.T, newBackends func(t *testing.T) Backends) {
	t.Helper()
	t.Run("TwoWorkersShareATask", func(t *testing.T) { testTwoWorkers(t, newBackends(t)) })
	t.Run("RedeliveredAndHalfDoneChunks", func(t *testing.T) { testHalfDoneChunks(t, newBackends(t)) })
	t.Run("ChunkAfterSuccessKeepsItsReservation", func(t *testing.T) { testChunkAfterSuccess(t, newBackends(t)) })
	t.Run("ChunksAfterCancelReleaseOnlyUnapplied", func(t *testing.T) { testChunksAfterCancel(t, newBackends(t)) })
	t.Run("LateReloadAfterTheEnd", func(t *testing.T) { testLateReload(t, newBackends(t)) })
	t.Run("SucceededWithTheCacheInLine", func(t *testing.T) { testSucceededInLine(t, newBackends(t)) })
}

// distNow is inside the issue window of activeTemplate's templates.
var distNow = base.Add(time.Hour)

// userFile is a distribution file of the given user ids as text, one per
// data row from line 2.
type userFile []string

// rowReader reads a userFile.
type rowReader struct {
	rows []string
	next int
}

func (r *rowReader) Read(dst []quan.FileRow) (int, error) {
	if r.next == len(r.rows) {
		return 0, io.EOF
	}
	n := 0
	for n < len(dst) && r.next < len(r.rows) {
		dst[n] = quan.FileRow{Line: int64(r.next + 2), UserID: r.rows[r.next]}
		n++
		r.next++
	}
	return n, nil
}

func (r *rowReader) Progress() (int64, int64) { return int64(r.next), int64(len(r.rows)) }
func (r *rowReader) Close() error             { return nil }

// worker returns a tasks.Runner named owner on b that reads file.
func worker(b Backends, owner string, file userFile) *tasks.Runner {
	return &tasks.Runner{
		Store: b.Tasks, Templates: b.Templates, Coupons: b.Coupons, Cache: b.Cache, Bus: b.Bus,
		Open: func(context.Context, *quan.Task) (quan.RowReader, error) {
			return &rowReader{rows: file}, nil
		},
		Owner: owner, Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond,
		Stall: 5 * time.Second, AckWait: 5 * time.Second,
		Now: func() time.Time { return distNow },
	}
}

// serve runs ServeChunks of each worker until the test ends.
func serve(t *testing.T, ws ...*tasks.Runner) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			if err := w.ServeChunks(ctx); err != nil {
				t.Errorf("ServeChunks of %s: %v", w.Owner, err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// runTask has w claim and run the one due task, to its end.
func runTask(t *testing.T, w *tasks.Runner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ran, err := w.RunOne(ctx)
	if err != nil || !ran {
		t.Fatalf("RunOne = %v, %v; want a task run", ran, err)
	}
}

// distTask stores a pending task of tpl in chunks of size, due now.
func distTask(t *testing.T, b Backends, tpl *quan.Template, size int) *quan.Task {
	t.Helper()
	task := newTask(t, tpl.ShopNo, tpl.ID, "shared")
	task.ChunkSize = size
	task.CreatedAt, task.UpdatedAt = distNow, distNow
	return createTask(t, b.TaskStores, task)
}

// checkDistribution checks that task succeeded with issued coupons and
// the given failures, that the store holds exactly those coupons, one per
// user, and that the cache agrees with the store on the stock.
func checkDistribution(t *testing.T, b Backends, tpl *quan.Template, id, issued int64, failed quan.FailedCounts) {
	t.Helper()
	got := getTask(t, b.TaskStores, id)
	c := got.Counts
	if got.Status != quan.TaskSucceeded || c.Issued != issued || c.Failed != failed || c.Rows != c.Issued+c.FailedTotal() ||
		got.ChunksDone != got.ChunksTotal {
		t.Fatalf("task %s (%s) after %d of %d chunks: %+v; want succeeded, %d issued, failures %+v",
			got.Status, got.Reason, got.ChunksDone, got.ChunksTotal, c, issued, failed)
	}
	st := stats(t, b.TaskStores, tpl.ID, 0)
	left := get(t, b.Templates, tpl.ID).Stock
	if st.Coupons != issued || st.Users != issued || st.MaxPerUser != 1 || left != tpl.Stock-issued {
		t.Fatalf("coupons %+v and %d of %d stock left; want %d coupons, one per user", st, left, tpl.Stock, issued)
	}
	cached, err := b.Cache.State(t.Context(), tpl.ID)
	if err != nil || cached.Stock != left {
		t.Fatalf("the cache's stock is %d (%v), the store's %d", cached.Stock, err, left)
	}
}

func testTwoWorkers(t *testing.T, b Backends) {
	const rows, stock = 12_000, 10_000
	tpl := activeTemplate(t, b.TaskStores, "shared", stock, 1)
	file := make(userFile, rows)
	for i := range file {
		file[i] = strconv.Itoa(1_000_000 + i)
	}
	file[100], file[200] = "not-a-user", file[150] // one invalid, one repeat
	task := distTask(t, b, tpl, 500)
	a, w := worker(b, "worker-a", file), worker(b, "worker-b", file)
	serve(t, a, w)
	runTask(t, a)
	checkDistribution(t, b, tpl, task.ID, stock, quan.FailedCounts{InvalidID: 1, Duplicate: 1, OutOfStock: rows - 2 - stock})
}

// testHalfDoneChunks leaves a task as crashed workers would: chunk 1
// applied and its message delivered again, chunk 2 reserved in the cache
// but never written to the store, and the runner dead. The next runner
// finishes the task without issuing twice or losing stock.
func testHalfDoneChunks(t *testing.T, b Backends) {
	const rows, size, stock = 3_000, 500, 5_000
	tpl := activeTemplate(t, b.TaskStores, "half done", stock, 1)
	file := make(userFile, rows)
	for i := range file {
		file[i] = strconv.Itoa(2_000_000 + i)
	}
	task := distTask(t, b, tpl, size)
	ctx := t.Context()

	// A runner that claims the task and dies at once.
	if got, err := b.Tasks.ClaimTask(ctx, "dead", distNow, distNow); err != nil || got == nil || got.ID != task.ID {
		t.Fatalf("ClaimTask = %v, %v", got, err)
	}
	chunk := func(seq int64) *quan.Chunk {
		c := &quan.Chunk{TaskID: task.ID, Seq: seq, Owner: "dead", Now: distNow}
		for i := (seq - 1) * size; i < seq*size; i++ {
			u, _ := strconv.ParseInt(file[i], 10, 64)
			c.Rows = append(c.Rows, quan.ChunkRow{Line: i + 2, UserID: u, Raw: file[i]})
		}
		return c
	}
	// Chunk 1 is published twice under different ids, as a runner that
	// publishes again after a stall does: it is applied once.
	data, err := quan.EncodeChunk(chunk(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := b.Bus.Publish(ctx, quan.Message{Subject: quan.ChunkSubject, ID: fmt.Sprintf("t%d-c1-%d", task.ID, i), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	// Chunk 2 was reserved in the cache by a worker that died before the
	// store applied it.
	w := worker(b, "worker", file)
	var later atomic.Int64 // how far past distNow the worker's clock is
	w.Now = func() time.Time { return distNow.Add(time.Duration(later.Load())) }
	if _, err := b.Cache.Reserve(ctx, tpl.ID, fmt.Sprintf("task:%d:chunk:2", task.ID), []int64{}, distNow); !errors.Is(err, quan.ErrCacheCold) {
		t.Fatalf("Reserve on a fresh cache: %v, want ErrCacheCold", err)
	}
	if err := b.Cache.Prime(ctx, quan.StateOf(get(t, b.Templates, tpl.ID)), func(func(quan.Holding, error) bool) {}); err != nil {
		t.Fatal(err)
	}
	var users []int64
	for _, r := range chunk(2).Rows {
		users = append(users, r.UserID)
	}
	if _, err := b.Cache.Reserve(ctx, tpl.ID, fmt.Sprintf("task:%d:chunk:2", task.ID), users, distNow); err != nil {
		t.Fatal(err)
	}
	serve(t, w)
	for deadline := time.Now().Add(20 * time.Second); getTask(t, b.TaskStores, task.ID).ChunksDone < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("chunk 1 was not applied within 20s")
		}
	}
	// The dead runner's lease (until distNow) has expired for a runner
	// that looks a moment later.
	later.Store(int64(time.Second))
	runTask(t, w)
	checkDistribution(t, b, tpl, task.ID, rows, quan.FailedCounts{})
}
