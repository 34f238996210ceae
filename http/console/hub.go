package console

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Hub polls each watched key once per Every, however many watch it, and
// hands each snapshot to every watcher. It is what keeps a page watched by
// a hundred operators at one store query per tick rather than a hundred:
// the poller for a key starts with its first watcher and stops with its
// last.
//
// Set the fields before the first Watch and do not change them after. The
// zero value, given a Fetch, is ready; Close it when done.
type Hub[K comparable, V any] struct {
	// Fetch reads the snapshot of key. The hub calls it once per key per
	// tick (the first at once, when a key gains its first watcher), with a
	// context that ends when the last watcher leaves or the hub closes.
	Fetch func(ctx context.Context, key K) (V, error)
	// Every is the time between two fetches of a key; zero or less
	// means one second.
	Every time.Duration
	// Final reports whether a snapshot is the last one (a task that has
	// finished). Watchers get that snapshot, then their channels close and
	// the key's poller stops. Nil means no snapshot is final.
	Final func(V) bool
	// Logger gets fetch errors: the first of a run at once, then at most
	// one a minute with the count of those left out. The poller tries
	// again next tick. Nil discards.
	Logger *slog.Logger

	mu      sync.Mutex
	pollers map[K]*poller[V]
	closed  bool
	running int            // poller goroutines that have not returned
	wg      sync.WaitGroup // the same goroutines, for Close to wait on
}

// poller is one key's polling loop and its watchers. Its fields are
// guarded by the hub's mu.
type poller[V any] struct {
	cancel   context.CancelFunc
	stopped  bool // no more snapshots go out; set with cancel
	watchers map[*watcher[V]]struct{}
	have     bool
	last     V
}

// watcher is one Watch call. Its channel has room for one snapshot, the
// latest; the hub only ever sends to it without blocking, under mu.
type watcher[V any] struct {
	ch     chan V
	closed bool // guarded by the hub's mu
}

// errLogEvery is how often a poller that keeps failing logs again.
const errLogEvery = time.Minute

// Watch subscribes to key's snapshots. The channel holds the latest
// snapshot only: a watcher that reads slowly skips stale ones and never
// holds up the others. It gets the current snapshot at once if the key's
// poller has one. The channel closes after a final snapshot, when cancel
// is called or ctx ends, and when the hub closes; the last watcher to
// leave stops the key's poller. Cancel may be called more than once.
//
// After Close, or with ctx already ended, Watch returns a closed channel.
func (h *Hub[K, V]) Watch(ctx context.Context, key K) (<-chan V, func()) {
	w := &watcher[V]{ch: make(chan V, 1)}
	h.mu.Lock()
	if h.closed || ctx.Err() != nil {
		h.mu.Unlock()
		close(w.ch)
		return w.ch, func() {}
	}
	p := h.pollers[key]
	if p == nil {
		p = h.start(key)
	}
	p.watchers[w] = struct{}{}
	if p.have {
		w.ch <- p.last
	}
	h.mu.Unlock()

	// leave is idempotent (w.closed), so ctx ending and cancel may both
	// call it.
	stop := context.AfterFunc(ctx, func() { h.leave(key, p, w) })
	return w.ch, func() {
		stop()
		h.leave(key, p, w)
	}
}

// start makes key's poller and runs its loop. The caller holds mu.
func (h *Hub[K, V]) start(key K) *poller[V] {
	ctx, cancel := context.WithCancel(context.Background())
	p := &poller[V]{cancel: cancel, watchers: make(map[*watcher[V]]struct{})}
	if h.pollers == nil {
		h.pollers = make(map[K]*poller[V])
	}
	h.pollers[key] = p
	h.running++
	h.wg.Add(1)
	go h.poll(ctx, key, p)
	return p
}

// leave takes w off p and stops p if w was its last watcher.
func (h *Hub[K, V]) leave(key K, p *poller[V], w *watcher[V]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.closed {
		return // a final snapshot or Close got there first
	}
	w.closed = true
	close(w.ch)
	delete(p.watchers, w)
	if len(p.watchers) == 0 {
		h.stop(key, p)
	}
}

// stop ends p's loop and forgets it, so that the next Watch of key starts
// a fresh poller. The caller holds mu.
func (h *Hub[K, V]) stop(key K, p *poller[V]) {
	p.stopped = true
	p.cancel()
	if h.pollers[key] == p {
		delete(h.pollers, key)
	}
}

// poll fetches key at once and then every tick until ctx ends or a
// snapshot is final.
func (h *Hub[K, V]) poll(ctx context.Context, key K, p *poller[V]) {
	defer func() {
		h.mu.Lock()
		h.running--
		h.mu.Unlock()
		h.wg.Done()
	}()
	every := h.Every
	if every <= 0 {
		every = time.Second
	}
	// A ticker rather than a sleep after each fetch, so that a slow Fetch
	// does not stretch the period; ticks missed while it runs are dropped.
	t := time.NewTicker(every)
	defer t.Stop()
	var failing, left int // errors in the current run, and those not logged
	var logged time.Time
	for {
		v, err := h.Fetch(ctx, key)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			failing++
			if failing == 1 || time.Since(logged) >= errLogEvery {
				h.logger().Warn("console hub: fetch", "key", key, "err", err, "failures", failing, "not_logged", left)
				logged, left = time.Now(), 0
			} else {
				left++
			}
		default:
			if failing > 0 {
				h.logger().Info("console hub: fetch recovered", "key", key, "failures", failing)
				failing, left = 0, 0
			}
			if h.publish(key, p, v) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publish hands v to every watcher of p and reports whether p is done:
// stopped meanwhile, or v is final, in which case every watcher's channel
// is closed after v.
func (h *Hub[K, V]) publish(key K, p *poller[V], v V) bool {
	final := h.Final != nil && h.Final(v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.stopped {
		return true
	}
	p.last, p.have = v, true
	for w := range p.watchers {
		offer(w.ch, v)
		if final {
			w.closed = true
			close(w.ch)
		}
	}
	if final {
		clear(p.watchers)
		h.stop(key, p)
	}
	return final
}

// offer puts v in ch, replacing a snapshot the reader has not taken yet.
// Only the hub sends on ch, under mu, so once the stale value is out the
// send cannot block.
func offer[V any](ch chan V, v V) {
	select {
	case ch <- v:
		return
	default:
	}
	select {
	case <-ch:
	default: // the reader took it meanwhile
	}
	ch <- v
}

// Close stops every poller, closes every watcher's channel and waits for
// the pollers' Fetch calls to return (their contexts are cancelled). Watch
// after Close returns a closed channel. Close is safe to call twice.
func (h *Hub[K, V]) Close() {
	h.mu.Lock()
	h.closed = true
	for key, p := range h.pollers {
		for w := range p.watchers {
			w.closed = true
			close(w.ch)
		}
		clear(p.watchers)
		h.stop(key, p)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// Pollers returns how many poller goroutines are running. A poller whose
// last watcher has left counts until its Fetch returns.
func (h *Hub[K, V]) Pollers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running
}

func (h *Hub[K, V]) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}
