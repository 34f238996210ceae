package quantest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// watchedBus is a Bus that records the IDs of the messages its consumers
// handled without error, so that a test can wait for one.
type watchedBus struct {
	quan.Bus
	mu      sync.Mutex
	handled map[string]bool
}

func watch(b quan.Bus) *watchedBus { return &watchedBus{Bus: b, handled: map[string]bool{}} }

func (b *watchedBus) Consume(ctx context.Context, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) error {
	return b.Bus.Consume(ctx, subject, durable, opt, func(ctx context.Context, m quan.Message) error {
		err := handle(ctx, m)
		if err == nil {
			b.mu.Lock()
			b.handled[m.ID] = true
			b.mu.Unlock()
		}
		return err
	})
}

// wait waits until message id has been handled.
func (b *watchedBus) wait(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		done := b.handled[id]
		b.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s was not handled within 20s", id)
		}
	}
}

// publishChunk publishes c under id, as a runner does.
func publishChunk(t *testing.T, b quan.Bus, id string, c *quan.Chunk) {
	t.Helper()
	data, err := quan.EncodeChunk(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), quan.Message{Subject: quan.ChunkSubject, ID: id, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// fileChunk returns chunk seq of a task of file in chunks of size, as the
// runner reads it (every row a distinct user).
func fileChunk(task *quan.Task, file userFile, seq, size int64) *quan.Chunk {
	c := &quan.Chunk{TaskID: task.ID, Seq: seq, Owner: "runner", Now: distNow}
	for i := (seq - 1) * size; i < min(seq*size, int64(len(file))); i++ {
		u, _ := strconv.ParseInt(file[i], 10, 64)
		c.Rows = append(c.Rows, quan.ChunkRow{Line: i + 2, UserID: u, Raw: file[i]})
	}
	return c
}

// users returns the file's ids from first on, n of them.
func users(first, n int) userFile {
	f := make(userFile, n)
	for i := range f {
		f[i] = strconv.Itoa(first + i)
	}
	return f
}

// checkCacheAgrees checks that the cache and the store agree on the
// stock of tpl.
func checkCacheAgrees(t *testing.T, b Backends, tpl int64) {
	t.Helper()
	left := get(t, b.Templates, tpl).Stock
	cached, err := b.Cache.State(t.Context(), tpl)
	if err != nil || cached.Stock != left {
		t.Fatalf("the cache's stock is %d (%v), the store's %d", cached.Stock, err, left)
	}
}

// testChunkAfterSuccess delivers a chunk again after its task succeeded,
// as the bus does when a worker applied it but died, or lost the bus,
// before acknowledging it: the store applied it, so its reservation stays
// taken.
func testChunkAfterSuccess(t *testing.T, b Backends) {
	const rows, size, stock = 1_000, 250, 5_000
	tpl := activeTemplate(t, b.TaskStores, "again after success", stock, 1)
	file := users(3_000_000, rows)
	task := distTask(t, b, tpl, size)
	bus := watch(b.Bus)
	w := worker(b, "worker", file)
	w.Bus = bus
	serve(t, w)
	runTask(t, w)
	checkDistribution(t, b, tpl, task.ID, rows, quan.FailedCounts{})

	publishChunk(t, bus, "late", fileChunk(task, file, 1, size))
	bus.wait(t, "late")
	checkDistribution(t, b, tpl, task.ID, rows, quan.FailedCounts{})
}

// testChunksAfterCancel delivers the chunks of a canceled task again: the
// one the store applied keeps its reservation, the one only reserved (by
// a worker that died before the store applied it) gives it back.
func testChunksAfterCancel(t *testing.T, b Backends) {
	const rows, size, stock = 500, 250, 5_000
	tpl := activeTemplate(t, b.TaskStores, "again after cancel", stock, 1)
	file := users(4_000_000, rows)
	task := distTask(t, b, tpl, size)
	ctx := t.Context()
	if got, err := b.Tasks.ClaimTask(ctx, "runner", distNow, distNow.Add(time.Hour)); err != nil || got == nil || got.ID != task.ID {
		t.Fatalf("ClaimTask = %v, %v", got, err)
	}
	bus := watch(b.Bus)
	w := worker(b, "worker", file)
	w.Bus = bus
	serve(t, w)
	publishChunk(t, bus, "c1", fileChunk(task, file, 1, size))
	bus.wait(t, "c1")
	var chunk2 []int64
	for _, r := range fileChunk(task, file, 2, size).Rows {
		chunk2 = append(chunk2, r.UserID)
	}
	if _, err := b.Cache.Reserve(ctx, tpl.ID, fmt.Sprintf("task:%d:chunk:2", task.ID), chunk2, distNow); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Tasks.UpdateTask(ctx, quan.AnyShop, task.ID, func(cur *quan.Task) error { return cur.Cancel(distNow) }); err != nil {
		t.Fatal(err)
	}

	publishChunk(t, bus, "c1-again", fileChunk(task, file, 1, size))
	publishChunk(t, bus, "c2-again", fileChunk(task, file, 2, size))
	bus.wait(t, "c1-again")
	bus.wait(t, "c2-again")
	if left := get(t, b.Templates, tpl.ID).Stock; left != stock-size {
		t.Fatalf("stock %d left; want %d, chunk 1's coupons taken", left, stock-size)
	}
	checkCacheAgrees(t, b, tpl.ID)
}

// gatedCache is a Cache whose first Prime waits, once it has been called,
// until open is closed.
type gatedCache struct {
	quan.Cache
	once    sync.Once
	entered chan struct{}
	open    chan struct{}
}

func (c *gatedCache) Prime(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error]) error {
	c.once.Do(func() {
		close(c.entered)
		<-c.open
	})
	return c.Cache.Prime(ctx, st, holdings)
}

// testLateReload has a worker that found the cache wrong about a chunk
// reload the cache from what the store held then, and finish the reload
// only after another chunk was applied and the runner finished the task
// and brought the cache in line: the cache still agrees with the store at
// the end.
func testLateReload(t *testing.T, b Backends) {
	const rows, size, stock = 4, 2, 1_000
	tpl := activeTemplate(t, b.TaskStores, "late reload", stock, 1)
	file := users(5_000_000, rows)
	task := distTask(t, b, tpl, size)
	ctx := t.Context()
	// A cache that wrongly holds no stock: the first chunk it reserves
	// differs from what the store decides, and its worker reloads it.
	st := quan.StateOf(tpl)
	st.Stock = 0
	if err := b.Cache.Prime(ctx, st, Holdings(nil)); err != nil {
		t.Fatal(err)
	}
	gate := &gatedCache{Cache: b.Cache, entered: make(chan struct{}), open: make(chan struct{})}
	bus := watch(b.Bus)
	w := worker(b, "worker", file)
	w.Cache, w.Bus = gate, bus
	serve(t, w)
	r := worker(b, "runner", file) // publishes the chunks and serves none
	ran := make(chan error, 1)
	go func() {
		_, err := r.RunOne(context.WithoutCancel(ctx))
		ran <- err
	}()
	select {
	case <-gate.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not reload the cache within 20s")
	}

	// The worker applied one chunk and is reloading the cache; another
	// worker applies the other, and the runner finishes the task.
	applied, err := b.Tasks.AppliedChunks(ctx, task.ID)
	if err != nil || len(applied) != 1 {
		t.Fatalf("AppliedChunks = %v, %v; want the worker's one", applied, err)
	}
	seq := applied[0]
	if _, err := b.Tasks.ApplyChunk(ctx, fileChunk(task, file, 3-seq, size)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the runner did not finish the task within 20s")
	}
	checkCacheAgrees(t, b, tpl.ID)

	close(gate.open)
	bus.wait(t, fmt.Sprintf("task-%d-chunk-%d", task.ID, seq))
	checkDistribution(t, b, tpl, task.ID, rows, quan.FailedCounts{})
}

// succeededWatch is a TaskStore that, when it marks a task succeeded,
// reads the stock of the cache and of the store at once, before the
// runner goes on. (The runner's heartbeat updates the task meanwhile.)
type succeededWatch struct {
	quan.TaskStore
	b Backends

	mu             sync.Mutex
	seen           bool
	cached, stored int64
	err            error
}

func (s *succeededWatch) UpdateTask(ctx context.Context, shop, id int64, fn func(*quan.Task) error) (*quan.Task, error) {
	t, err := s.TaskStore.UpdateTask(ctx, shop, id, fn)
	if err != nil || t.Status != quan.TaskSucceeded {
		return t, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen {
		s.seen = true
		st, cerr := s.b.Cache.State(ctx, t.TemplateID)
		tpl, terr := s.b.Templates.Template(ctx, quan.AnyShop, t.TemplateID)
		s.err = errors.Join(cerr, terr)
		if s.err == nil {
			s.cached, s.stored = st.Stock, tpl.Stock
		}
	}
	return t, nil
}

// testSucceededInLine runs a task on a cache that holds more stock than
// the store (as a reload that read the store before other chunks were
// applied leaves it): the task is marked succeeded only once the cache
// agrees with the store.
func testSucceededInLine(t *testing.T, b Backends) {
	const rows, size, stock = 4, 2, 1_000
	tpl := activeTemplate(t, b.TaskStores, "in line", stock, 1)
	file := users(6_000_000, rows)
	task := distTask(t, b, tpl, size)
	st := quan.StateOf(tpl)
	st.Stock = stock + 7
	if err := b.Cache.Prime(t.Context(), st, Holdings(nil)); err != nil {
		t.Fatal(err)
	}
	w := worker(b, "worker", file)
	serve(t, w)
	r := worker(b, "runner", file)
	watch := &succeededWatch{TaskStore: b.Tasks, b: b}
	r.Store = watch
	runTask(t, r)
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if !watch.seen || watch.err != nil || watch.cached != watch.stored {
		t.Fatalf("when the task was marked succeeded (%v), the cache held %d, the store %d (%v)", watch.seen, watch.cached, watch.stored, watch.err)
	}
	checkDistribution(t, b, tpl, task.ID, rows, quan.FailedCounts{})
}
