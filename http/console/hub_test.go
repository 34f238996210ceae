package console

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counter is a Fetch that counts its calls and returns the count, so a
// snapshot's value tells which call made it.
type counter struct{ calls atomic.Int64 }

func (c *counter) fetch(ctx context.Context, key string) (int64, error) {
	return c.calls.Add(1), nil
}

// within is how long a test waits for something that should happen at
// once; only a broken hub makes a test wait that long.
const within = 5 * time.Second

func recv[V any](t *testing.T, ch <-chan V) (V, bool) {
	t.Helper()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-time.After(within):
		t.Fatal("no snapshot and no close")
		panic("unreachable")
	}
}

// drain reads ch until it closes and returns the last snapshot.
func drain[V any](t *testing.T, ch <-chan V) (last V, n int) {
	t.Helper()
	for {
		v, ok := recv(t, ch)
		if !ok {
			return last, n
		}
		last, n = v, n+1
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHubOneFetchForManyWatchers(t *testing.T) {
	t.Parallel()
	t.Run("OneTick", func(t *testing.T) {
		t.Parallel()
		// A period no test outlives: every watcher must be served by the
		// first fetch, whether it came before it (published) or after
		// (the current snapshot at once).
		var c counter
		h := &Hub[string, int64]{Fetch: c.fetch, Every: time.Hour}
		defer h.Close()
		for range 100 {
			ch, cancel := h.Watch(t.Context(), "task-1")
			defer cancel()
			if v, ok := recv(t, ch); !ok || v != 1 {
				t.Fatalf("got %d, %t; want the first snapshot, 1", v, ok)
			}
		}
		if n := c.calls.Load(); n != 1 {
			t.Errorf("Fetch called %d times for 100 watchers in one tick, want 1", n)
		}
		if n := h.Pollers(); n != 1 {
			t.Errorf("Pollers() = %d, want 1", n)
		}
	})
	t.Run("ManyTicks", func(t *testing.T) {
		t.Parallel()
		var c counter
		every := 5 * time.Millisecond
		h := &Hub[string, int64]{Fetch: c.fetch, Every: every}
		defer h.Close()
		begin := time.Now()
		var wg sync.WaitGroup
		for range 100 {
			ch, cancel := h.Watch(t.Context(), "task-1")
			defer cancel()
			wg.Go(func() {
				// Read until the tenth fetch's snapshot or a later one.
				for v := int64(0); v < 10; {
					var ok bool
					if v, ok = recv(t, ch); !ok {
						t.Error("channel closed early")
						return
					}
				}
			})
		}
		wg.Wait()
		calls := c.calls.Load()
		// The first fetch is at once, then one per tick; a ticker drops
		// the ticks a slow machine misses, so the bound only ever errs
		// towards fewer calls.
		ticks := int64(time.Since(begin) / every)
		if calls > ticks+1 {
			t.Errorf("Fetch called %d times in %d ticks with 100 watchers, want ≤ %d", calls, ticks, ticks+1)
		}
	})
}

func TestHubKeysPollApart(t *testing.T) {
	t.Parallel()
	var calls sync.Map
	h := &Hub[string, string]{Every: time.Hour, Fetch: func(ctx context.Context, key string) (string, error) {
		calls.Store(key, true)
		return "snapshot of " + key, nil
	}}
	defer h.Close()
	a, cancelA := h.Watch(t.Context(), "a")
	defer cancelA()
	b, cancelB := h.Watch(t.Context(), "b")
	defer cancelB()
	if v, _ := recv(t, a); v != "snapshot of a" {
		t.Errorf("a got %q", v)
	}
	if v, _ := recv(t, b); v != "snapshot of b" {
		t.Errorf("b got %q", v)
	}
	if n := h.Pollers(); n != 2 {
		t.Errorf("Pollers() = %d, want 2", n)
	}
}

func TestHubLastWatcherStopsPoller(t *testing.T) {
	t.Parallel()
	started := make(chan context.Context, 1)
	ended := make(chan error, 1)
	h := &Hub[string, int]{Every: time.Hour, Fetch: func(ctx context.Context, key string) (int, error) {
		started <- ctx
		<-ctx.Done() // a slow query, cut short by its context
		ended <- ctx.Err()
		return 0, ctx.Err()
	}}
	defer h.Close()
	var cancels []func()
	for range 3 {
		_, cancel := h.Watch(t.Context(), "task-1")
		cancels = append(cancels, cancel)
	}
	var fetchCtx context.Context
	select {
	case fetchCtx = <-started:
	case <-time.After(within):
		t.Fatal("Fetch not called")
	}

	cancels[0]()
	cancels[1]()
	cancels[1]() // twice is harmless
	if err := fetchCtx.Err(); err != nil {
		t.Fatalf("Fetch's context ended with a watcher left: %v", err)
	}
	if n := h.Pollers(); n != 1 {
		t.Fatalf("Pollers() = %d with a watcher left, want 1", n)
	}

	cancels[2]()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Fetch's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(within):
		t.Fatal("Fetch's context did not end when the last watcher left")
	}
	waitFor(t, "Pollers() == 0", func() bool { return h.Pollers() == 0 })
}

func TestHubWatchContextEndsWatch(t *testing.T) {
	t.Parallel()
	var c counter
	h := &Hub[string, int64]{Fetch: c.fetch, Every: time.Millisecond}
	defer h.Close()
	ctx, cancel := context.WithCancel(t.Context())
	ch, _ := h.Watch(ctx, "task-1")
	recv(t, ch)
	cancel()
	drain(t, ch)
	waitFor(t, "Pollers() == 0", func() bool { return h.Pollers() == 0 })

	ch, _ = h.Watch(ctx, "task-1")
	if _, ok := recv(t, ch); ok {
		t.Error("Watch with an ended context: got a snapshot, want a closed channel")
	}
	if n := h.Pollers(); n != 0 {
		t.Errorf("Watch with an ended context started a poller: Pollers() = %d", n)
	}
}

func TestHubFinal(t *testing.T) {
	t.Parallel()
	var c counter
	h := &Hub[string, int64]{
		Fetch: c.fetch,
		Every: time.Millisecond,
		Final: func(v int64) bool { return v >= 3 },
	}
	defer h.Close()
	chans := make([]<-chan int64, 10)
	for i := range chans {
		ch, cancel := h.Watch(t.Context(), "task-1")
		defer cancel()
		chans[i] = ch
	}
	for i, ch := range chans {
		if last, _ := drain(t, ch); last != 3 {
			t.Errorf("watcher %d: last snapshot %d, want the final one, 3", i, last)
		}
	}
	waitFor(t, "Pollers() == 0", func() bool { return h.Pollers() == 0 })
	if n := c.calls.Load(); n != 3 {
		t.Errorf("Fetch called %d times, want 3: none after the final snapshot", n)
	}

	// A later watcher of a finished key gets a poller of its own, which
	// fetches once, finds the snapshot final and ends at once too.
	ch, cancel := h.Watch(t.Context(), "task-1")
	defer cancel()
	if last, n := drain(t, ch); n != 1 || last != 4 {
		t.Errorf("late watcher: %d snapshots, last %d; want 1, 4", n, last)
	}
}

func TestHubSlowWatcherBlocksNobody(t *testing.T) {
	t.Parallel()
	var c counter
	h := &Hub[string, int64]{Fetch: c.fetch, Every: time.Millisecond}
	defer h.Close()
	stuck, cancelStuck := h.Watch(t.Context(), "task-1") // never read
	defer cancelStuck()
	ch, cancel := h.Watch(t.Context(), "task-1")
	defer cancel()
	var prev int64
	for range 20 {
		v, ok := recv(t, ch)
		if !ok {
			t.Fatal("channel closed")
		}
		if v <= prev {
			t.Fatalf("got %d after %d: snapshots must only move forward", v, prev)
		}
		prev = v
	}
	// The one that never read holds a single, recent snapshot.
	if v := <-stuck; v < 2 {
		t.Errorf("unread watcher holds snapshot %d; want a recent one, not the first", v)
	}
}

func TestHubClose(t *testing.T) {
	t.Parallel()
	var c counter
	h := &Hub[string, int64]{Fetch: c.fetch, Every: time.Millisecond}
	var chans []<-chan int64
	for _, key := range []string{"a", "a", "b", "c"} {
		ch, cancel := h.Watch(t.Context(), key)
		defer cancel() // after Close: harmless
		chans = append(chans, ch)
	}
	for _, ch := range chans {
		recv(t, ch)
	}
	h.Close()
	if n := h.Pollers(); n != 0 {
		t.Errorf("Pollers() = %d after Close, want 0", n)
	}
	for _, ch := range chans {
		drain(t, ch)
	}
	calls := c.calls.Load()
	ch, _ := h.Watch(t.Context(), "a")
	if _, ok := recv(t, ch); ok {
		t.Error("Watch after Close: got a snapshot, want a closed channel")
	}
	h.Close() // twice is harmless
	if n := c.calls.Load(); n != calls {
		t.Errorf("Fetch called %d times after Close", n-calls)
	}
}

func TestHubFetchErrorRetriedAndLoggedOnce(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	var calls atomic.Int64
	h := &Hub[string, int64]{
		Every:  time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Fetch: func(ctx context.Context, key string) (int64, error) {
			if n := calls.Add(1); n <= 5 {
				return 0, errors.New("database is locked")
			}
			return 42, nil
		},
	}
	ch, cancel := h.Watch(t.Context(), "task-1")
	defer cancel()
	if v, ok := recv(t, ch); !ok || v != 42 {
		t.Fatalf("got %d, %t; want 42 once Fetch works again", v, ok)
	}
	h.Close()
	out := logs.String()
	if n := strings.Count(out, "database is locked"); n != 1 {
		t.Errorf("5 errors in a row logged %d times, want once (rate-limited):\n%s", n, out)
	}
	if !strings.Contains(out, "fetch recovered") || !strings.Contains(out, "failures=5") {
		t.Errorf("no recovery line with the failure count:\n%s", out)
	}
}

// lockedBuffer is a bytes.Buffer that the poller's goroutine may write to
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
