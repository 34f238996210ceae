package quantest

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestIdempotency runs the conformance suite of quan.Idempotency. Keys
// are fresh per subtest; newStore may return one store for all.
func TestIdempotency(t *testing.T, newStore func(t *testing.T) quan.Idempotency) {
	t.Helper()
	var n atomic.Int64
	key := func() string { return fmt.Sprintf("idem-%d-%d", time.Now().UnixNano(), n.Add(1)) }
	begin := func(t *testing.T, s quan.Idempotency, k string, want quan.KeyState) *quan.Replay {
		t.Helper()
		got, r, err := s.Begin(t.Context(), k, time.Minute)
		if err != nil || got != want {
			t.Fatalf("Begin(%s) = %v, %v; want %v", k, got, err, want)
		}
		return r
	}
	t.Run("NewRunningDone", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key()
		begin(t, s, k, quan.KeyNew)
		begin(t, s, k, quan.KeyRunning)
		want := quan.Replay{Fingerprint: "f1", Status: 202, Header: map[string]string{"Location": "/x"}, Body: []byte(`{"a":1}`)}
		if err := s.Complete(t.Context(), k, want, time.Minute); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got := begin(t, s, k, quan.KeyDone); !reflect.DeepEqual(*got, want) {
				t.Errorf("replay %+v, want %+v", got, want)
			}
		}
		// Abort leaves a completed key alone.
		if err := s.Abort(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		begin(t, s, k, quan.KeyDone)
	})
	t.Run("AbortFreesARunningKey", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key()
		begin(t, s, k, quan.KeyNew)
		if err := s.Abort(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		begin(t, s, k, quan.KeyNew)
	})
	t.Run("RunningMarkExpires", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key()
		if st, _, err := s.Begin(t.Context(), k, 50*time.Millisecond); err != nil || st != quan.KeyNew {
			t.Fatalf("Begin = %v, %v", st, err)
		}
		time.Sleep(150 * time.Millisecond)
		begin(t, s, k, quan.KeyNew)
	})
	t.Run("ConcurrentBeginsOneNew", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key()
		var news atomic.Int64
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				st, _, err := s.Begin(t.Context(), k, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if st == quan.KeyNew {
					news.Add(1)
				}
			})
		}
		wg.Wait()
		if news.Load() != 1 {
			t.Errorf("%d of 100 concurrent Begins got KeyNew, want 1", news.Load())
		}
	})
}

// TestRateLimiter runs the conformance suite of quan.RateLimiter.
func TestRateLimiter(t *testing.T, newLimiter func(t *testing.T) quan.RateLimiter) {
	t.Helper()
	var n atomic.Int64
	key := func() string { return fmt.Sprintf("rate-%d-%d", time.Now().UnixNano(), n.Add(1)) }
	t.Run("BurstThenRefused", func(t *testing.T) {
		t.Parallel()
		l, k := newLimiter(t), key()
		for i := range 3 {
			if ok, _, err := l.Allow(t.Context(), k, 0.01, 3); err != nil || !ok {
				t.Fatalf("take %d of a burst of 3: %v, %v", i+1, ok, err)
			}
		}
		ok, wait, err := l.Allow(t.Context(), k, 0.01, 3)
		if err != nil || ok || wait < 90*time.Second || wait > 100*time.Second {
			t.Fatalf("a fourth take: %v, retry after %s, %v; want refused, about 100s", ok, wait, err)
		}
		if ok, _, err := l.Allow(t.Context(), key(), 0.01, 3); err != nil || !ok {
			t.Fatalf("another key: %v, %v; want its own bucket", ok, err)
		}
	})
	t.Run("Refills", func(t *testing.T) {
		t.Parallel()
		l, k := newLimiter(t), key()
		if ok, _, _ := l.Allow(t.Context(), k, 20, 1); !ok {
			t.Fatal("first take refused")
		}
		if ok, _, _ := l.Allow(t.Context(), k, 20, 1); ok {
			t.Fatal("second take at once allowed")
		}
		time.Sleep(120 * time.Millisecond) // 20 a second: one token in 50ms
		if ok, _, err := l.Allow(t.Context(), k, 20, 1); !ok || err != nil {
			t.Fatalf("a take after the refill: %v, %v", ok, err)
		}
	})
	t.Run("ConcurrentTakesStopAtBurst", func(t *testing.T) {
		t.Parallel()
		l, k := newLimiter(t), key()
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				ok, _, err := l.Allow(t.Context(), k, 0.001, 50)
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != 50 {
			t.Errorf("%d of 200 concurrent takes allowed from a burst of 50", allowed.Load())
		}
	})
}
