package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/quantest"
)

// These tests run against the Redis named by QUAN_TEST_REDIS, e.g.
//
//	redis-server --save "" --appendonly no &
//	QUAN_TEST_REDIS=redis://127.0.0.1:6379 go test -race ./redis
//
// Without it they skip; CI sets it, so there an unreachable Redis fails.
// Each test works under its own random key prefix and deletes its keys
// when done, so a shared Redis is fine. TestFlushAll really runs FLUSHALL
// and so only runs with QUAN_TEST_REDIS_FLUSH=1, on a Redis nothing else
// uses at the time.

func testURL(t testing.TB) string {
	t.Helper()
	return integration.Need(t, integration.Redis)[0] // start one with: redis-server --save "" --appendonly no
}

// newTestCache opens a cache under a fresh prefix and deletes the prefix's
// keys at cleanup.
func newTestCache(t testing.TB) *Cache {
	t.Helper()
	url := testURL(t)
	var b [6]byte
	rand.Read(b[:])
	prefix := "quantest:" + hex.EncodeToString(b[:]) + ":"
	c, err := Open(context.Background(), url, prefix)
	if err != nil {
		t.Fatalf("QUAN_TEST_REDIS=%s: %v", url, err)
	}
	t.Cleanup(func() {
		if err := c.Drop(context.Background()); err != nil {
			t.Errorf("delete test keys: %v", err)
		}
		c.Close()
	})
	return c
}

func TestCache(t *testing.T) {
	quantest.TestCache(t, func(t *testing.T) quan.Cache { return newTestCache(t) })
}

func TestOpen(t *testing.T) {
	url := testURL(t)
	if _, err := Open(t.Context(), url, "bad{prefix"); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("Open with a brace in the prefix: %v, want ErrInvalid", err)
	}
	if _, err := Open(t.Context(), "redis://127.0.0.1:1/0", "x:"); err == nil {
		t.Error("Open of a closed port succeeded")
	}
	c, err := Open(t.Context(), url, "x:")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
}

// A key record that outlives its template's state (the state hash lost,
// the record not) must not be trusted once the template is primed again.
func TestStaleKeyRecord(t *testing.T) {
	c := newTestCache(t)
	ctx := t.Context()
	st := quan.TemplateState{ID: 1, Status: quan.TemplateActive, IssueStart: time.Unix(0, 0),
		IssueEnd: time.Unix(1<<40, 0), PerUserLimit: 1, Stock: 10}
	if err := c.Prime(ctx, st, quantest.Holdings(nil)); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	if _, err := c.Reserve(ctx, 1, "k", []int64{1}, now); err != nil {
		t.Fatal(err)
	}
	k := c.keys(1)
	if err := c.deleteKeys(ctx, func(key string) bool { return key == k.state() || key == k.users() }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, 1, "k", []int64{1}, now); !errors.Is(err, quan.ErrCacheCold) {
		t.Fatalf("Reserve after the state was lost: %v, want ErrCacheCold", err)
	}
	// The store says user 1 holds one and 9 are left.
	st.Stock = 9
	if err := c.Prime(ctx, st, quantest.Holdings([]quan.Holding{{UserID: 1, Count: 1}})); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, 1, "k"); err != nil {
		t.Fatal(err)
	}
	got, err := c.State(ctx, 1)
	if err != nil || got.Stock != 9 {
		t.Fatalf("after releasing a key of the lost state: stock %d, %v; want 9", got.Stock, err)
	}
	if n, _ := c.Held(ctx, 1, 1); n != 1 {
		t.Fatalf("user 1 holds %d, want 1", n)
	}
}

// TestCacheLoss loses the cache in the middle of a stampede, by deleting
// this test's keys: every Reserve afterwards is ErrCacheCold until the
// template is primed again from the store, and the store never has to
// refuse a reservation the cache granted.
func TestCacheLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		del  func(k keys) func(string) bool
	}{
		{"Everything", func(keys) func(string) bool { return func(string) bool { return true } }},
		{"StateOnly", func(k keys) func(string) bool {
			return func(key string) bool { return key == k.state() || key == k.users() }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCache(t)
			testLoss(t, c, func(ctx context.Context) error {
				// The state first, at once, as a real loss would; SCAN and
				// DEL of the rest take longer than the stampede's calls.
				k := c.keys(1)
				if err := c.client.Do(ctx, c.client.B().Del().Key(k.state(), k.users()).Build()).Error(); err != nil {
					return err
				}
				return c.deleteKeys(ctx, tc.del(k))
			})
		})
	}
}

// TestFlushAll is TestCacheLoss with a real FLUSHALL. It wipes the whole
// Redis, so it runs only with QUAN_TEST_REDIS_FLUSH=1.
func TestFlushAll(t *testing.T) {
	if os.Getenv("QUAN_TEST_REDIS_FLUSH") != "1" {
		t.Skip("set QUAN_TEST_REDIS_FLUSH=1 to run FLUSHALL on the Redis of QUAN_TEST_REDIS (it wipes every key)")
	}
	c := newTestCache(t)
	testLoss(t, c, func(ctx context.Context) error {
		return c.client.Do(ctx, c.client.B().Flushall().Build()).Error()
	})
}

// store stands in for the store, the final arbiter: it records what the
// cache granted and counts what it would have had to refuse.
type store struct {
	mu       sync.Mutex
	left     int64
	holdings map[int64]int64
	limit    int64
	refused  int // grants the store would refuse: oversold or over the limit
}

func (s *store) commit(u int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left <= 0 || s.holdings[u] >= s.limit {
		s.refused++
		return
	}
	s.left--
	s.holdings[u]++
}

func testLoss(t *testing.T, c *Cache, lose func(context.Context) error) {
	const stock, calls, workers = 1_000, 10_000, 100
	ctx := t.Context()
	st := quan.TemplateState{ID: 1, Status: quan.TemplateActive, IssueStart: time.Unix(0, 0),
		IssueEnd: time.Unix(1<<40, 0), PerUserLimit: 1, Stock: stock}
	now := time.Unix(1000, 0)
	db := &store{left: stock, holdings: map[int64]int64{}, limit: 1}
	if err := c.Prime(ctx, st, quantest.Holdings(nil)); err != nil {
		t.Fatal(err)
	}

	// phase: 0 before the loss, 1 losing, 2 lost, 3 primed again. A
	// Reserve may be cold only after phase 0, and must be if it starts and
	// ends in phase 2.
	var phase, granted, cold, grantedAfter atomic.Int64
	var inflight sync.RWMutex // a Reserve and its commit, against the store's snapshot
	var errs sync.Map
	work := make(chan int, calls)
	for i := range calls {
		work <- i
	}
	close(work)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			<-start
			for i := range work {
				u := int64(i % 2_500) // users call four times each
				for {
					inflight.RLock()
					p0 := phase.Load()
					out, err := c.Reserve(ctx, 1, fmt.Sprintf("call-%d", i), []int64{u}, now)
					p1 := phase.Load()
					if err == nil && out[0] == "" {
						granted.Add(1)
						if p0 == 3 {
							grantedAfter.Add(1)
						}
						db.commit(u)
					}
					inflight.RUnlock()
					switch {
					case errors.Is(err, quan.ErrCacheCold):
						cold.Add(1)
						if p1 == 0 {
							errs.Store("cold before the loss", err)
						}
						time.Sleep(time.Millisecond)
						continue
					case err != nil:
						errs.Store(err.Error(), err)
					case p0 == 2 && p1 == 2:
						errs.Store("a Reserve after the loss was not cold", fmt.Errorf("got %q", out))
					}
					break
				}
			}
		})
	}
	close(start)

	for granted.Load() < 300 {
		time.Sleep(time.Millisecond)
	}
	phase.Store(1)
	if err := lose(ctx); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
wait:
	for cold.Load() < 200 {
		select {
		case <-done:
			break wait // every call made before the loss ended: nothing to prime for
		case <-time.After(time.Millisecond):
		}
	}
	if cold.Load() == 0 {
		t.Fatal("no Reserve saw the loss: the calls ended before it")
	}
	// Prime again from the store, with nothing in flight against it.
	inflight.Lock()
	phase.Store(3)
	db.mu.Lock()
	st.Stock = db.left
	var hs []quan.Holding
	for u, n := range db.holdings {
		hs = append(hs, quan.Holding{UserID: u, Count: n})
	}
	left := db.left
	db.mu.Unlock()
	err := c.Prime(ctx, st, quantest.Holdings(hs))
	inflight.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	<-done

	errs.Range(func(k, v any) bool { t.Errorf("%v: %v", k, v); return true })
	t.Logf("granted %d (%d after priming again with %d left), %d cold answers", granted.Load(), grantedAfter.Load(), left, cold.Load())
	if db.refused > 0 {
		t.Errorf("the store had to refuse %d grants of the cache", db.refused)
	}
	if grantedAfter.Load() > left {
		t.Errorf("%d granted after priming with %d left", grantedAfter.Load(), left)
	}
	if db.left != 0 {
		t.Errorf("the store has %d left after %d calls, want 0", db.left, calls)
	}
	if got, err := c.State(ctx, 1); err != nil || got.Stock != 0 {
		t.Errorf("cache stock %d, %v; want 0", got.Stock, err)
	}
}

// TestThroughput prints (with -v) Reserve calls per second for single-user
// batches from 200 goroutines, and users per second for 5,000-user
// batches. It asserts nothing about speed.
func TestThroughput(t *testing.T) {
	c := newTestCache(t)
	calls, _, err := quantest.CacheThroughput(t.Context(), c, 1, 200, 1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, users, err := quantest.CacheThroughput(t.Context(), c, 2, 8, 5_000, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redis: %.0f Reserve calls/s (1 user each, 200 goroutines); %.0f users/s (5,000-user batches, 8 goroutines)", calls, users)
}

func TestIdempotency(t *testing.T) {
	quantest.TestIdempotency(t, func(t *testing.T) quan.Idempotency { return newTestCache(t) })
}

func TestRateLimiter(t *testing.T) {
	quantest.TestRateLimiter(t, func(t *testing.T) quan.RateLimiter { return newTestCache(t) })
}

// TestLoadPeriods: a Load writes the period counts of its holdings where,
// and with the expiry, the reservations keep theirs, in batches past
// primeBatch, and leaves no temporary hash behind.
func TestLoadPeriods(t *testing.T) {
	c := newTestCache(t)
	ctx := t.Context()
	now := time.Date(2030, 3, 14, 4, 0, 0, 0, time.UTC) // a Thursday noon in Shanghai
	st := quan.TemplateState{ID: 1, Status: quan.TemplateActive, IssueStart: time.Unix(0, 0),
		IssueEnd: time.Unix(1<<40, 0), PerUserLimit: 5, PerUserDaily: 1, PerUserWeekly: 2, Stock: 100}
	day := quan.ShanghaiDay(now)
	const users = 2*primeBatch + 5
	hs := make([]quan.Holding, users)
	for i := range hs {
		// Every user received one today, every other one more this week.
		hs[i] = quan.Holding{UserID: int64(i + 1), Count: 1 + int64(i%2), Day: 1, Week: 1 + int64(i%2), PeriodDay: day}
	}
	if loaded, err := c.Load(ctx, st, quantest.Holdings(hs)); err != nil || !loaded {
		t.Fatalf("Load = %v, %v", loaded, err)
	}
	k := c.keys(1)
	for _, h := range []struct {
		key string
		ttl int64
	}{{k.day(day), 172800}, {k.week(quan.WeekOfDay(day)), 691200}} {
		n, err := c.client.Do(ctx, c.client.B().Hlen().Key(h.key).Build()).AsInt64()
		if err != nil || n != users {
			t.Errorf("HLEN %s = %d, %v; want %d", h.key, n, err, users)
		}
		ttl, err := c.client.Do(ctx, c.client.B().Ttl().Key(h.key).Build()).AsInt64()
		if err != nil || ttl <= h.ttl-60 || ttl > h.ttl {
			t.Errorf("TTL %s = %d, %v; want about %d, as reserveLua sets", h.key, ttl, err, h.ttl)
		}
	}
	keys, err := c.client.Do(ctx, c.client.B().Keys().Pattern(k.base+"p:*").Build()).AsStrSlice()
	if err != nil || len(keys) > 0 {
		t.Errorf("temporary keys left: %v, %v", keys, err)
	}
	out, err := c.Reserve(ctx, 1, "k", []int64{users, users - 1}, now)
	if err != nil || out[0] != quan.RefusedDaily || out[1] != quan.RefusedDaily {
		t.Fatalf("Reserve today = %q, %v; want daily_limit_reached twice", out, err)
	}
	out, err = c.Reserve(ctx, 1, "k2", []int64{users, users - 1}, now.Add(24*time.Hour))
	if err != nil || out[0] != "" || out[1] != quan.RefusedWeekly {
		t.Fatalf("Reserve tomorrow = %q, %v; want one reserved, one weekly_limit_reached", out, err)
	}
}
