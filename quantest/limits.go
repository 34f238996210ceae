package quantest

import (
	"fmt"
	"math"
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
	bucket := func(rate float64, burst int) quan.Bucket { return quan.Bucket{Key: key(), Rate: rate, Burst: burst} }
	// take wants Allow(bs) to take a token from each of bs.
	take := func(t *testing.T, l quan.RateLimiter, what string, bs ...quan.Bucket) {
		t.Helper()
		if refused, wait, err := l.Allow(t.Context(), bs...); err != nil || refused != -1 {
			t.Fatalf("%s: refused %d, retry after %s, %v; want allowed (-1)", what, refused, wait, err)
		}
	}
	// refuse wants Allow(bs) refused by bs[want], with a wait in [lo, hi].
	refuse := func(t *testing.T, l quan.RateLimiter, what string, want int, lo, hi time.Duration, bs ...quan.Bucket) {
		t.Helper()
		refused, wait, err := l.Allow(t.Context(), bs...)
		if err != nil || refused != want || wait < lo || wait > hi {
			t.Fatalf("%s: refused %d, retry after %s, %v; want refused by %d, retry after %s to %s", what, refused, wait, err, want, lo, hi)
		}
	}
	t.Run("BurstThenRefused", func(t *testing.T) {
		t.Parallel()
		l, b := newLimiter(t), bucket(0.01, 3)
		for i := range 3 {
			take(t, l, fmt.Sprintf("take %d of a burst of 3", i+1), b)
		}
		refuse(t, l, "a fourth take", 0, 90*time.Second, 100*time.Second, b)
		take(t, l, "another key: its own bucket", bucket(0.01, 3))
	})
	t.Run("Refills", func(t *testing.T) {
		t.Parallel()
		l, b := newLimiter(t), bucket(20, 1)
		take(t, l, "first take", b)
		refuse(t, l, "second take at once", 0, time.Nanosecond, 50*time.Millisecond, b)
		time.Sleep(120 * time.Millisecond) // 20 a second: one token in 50ms
		take(t, l, "a take after the refill", b)
	})
	t.Run("PeekTakesNothing", func(t *testing.T) {
		t.Parallel()
		l, b := newLimiter(t), bucket(0.01, 2)
		peek := func(what string, lo, hi time.Duration) {
			t.Helper()
			if wait, err := l.Peek(t.Context(), b); err != nil || wait < lo || wait > hi {
				t.Fatalf("%s: Peek = %s, %v; want %s to %s", what, wait, err, lo, hi)
			}
		}
		peek("a bucket never used", 0, 0)
		peek("peeked again", 0, 0) // peeking took nothing
		take(t, l, "first take", b)
		peek("one token left", 0, 0)
		take(t, l, "second take", b)
		peek("empty", 90*time.Second, 100*time.Second)
		refuse(t, l, "a take after the peeks", 0, 90*time.Second, 100*time.Second, b)
		peek("still empty", 90*time.Second, 100*time.Second)
		other := bucket(0.01, 1)
		peek2 := func() time.Duration {
			w, err := l.Peek(t.Context(), other)
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		if w := peek2(); w != 0 {
			t.Fatalf("Peek of another key = %s, want 0", w)
		}
		take(t, l, "another key after a peek: still full", other)
		if w := peek2(); w < 90*time.Second {
			t.Fatalf("Peek of the other key once taken = %s, want about 100s", w)
		}
	})
	t.Run("NoBuckets", func(t *testing.T) {
		t.Parallel()
		take(t, newLimiter(t), "no buckets")
	})
	t.Run("SlowBuckets", func(t *testing.T) {
		// A bucket that refills once in 31 years, or never in any time
		// a Duration holds: refused with a long wait, not an error or a
		// wait that overflowed.
		t.Parallel()
		l := newLimiter(t)
		for _, rate := range []float64{1e-9, 1e-12, 1e-30} {
			b := bucket(rate, 1)
			take(t, l, fmt.Sprintf("rate %g: first take", rate), b)
			refuse(t, l, fmt.Sprintf("rate %g: second take", rate), 0, 100*24*time.Hour, math.MaxInt64, b)
		}
	})
	t.Run("SeveralTakeFromEach", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		a, b, c := bucket(0.01, 2), bucket(0.01, 3), bucket(0.01, 1)
		take(t, l, "a, b and c", a, b, c)
		// c is empty now; a holds 1, b 2.
		take(t, l, "a and b", a, b)
		refuse(t, l, "a alone, emptied by the two", 0, 90*time.Second, 100*time.Second, a)
		take(t, l, "b alone, its last", b)
		refuse(t, l, "b alone, emptied", 0, 90*time.Second, 100*time.Second, b)
	})
	t.Run("OneEmptyNoneTaken", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		full, empty := bucket(0.01, 2), bucket(0.1, 1)
		take(t, l, "the last of empty", empty)
		for i := range 5 {
			refuse(t, l, fmt.Sprintf("full and empty, try %d", i+1), 1, 9*time.Second, 10*time.Second, full, empty)
			refuse(t, l, fmt.Sprintf("empty and full, try %d", i+1), 0, 9*time.Second, 10*time.Second, empty, full)
		}
		// The refusals took nothing from full: its burst of 2 is all there.
		take(t, l, "full, 1 of 2", full)
		take(t, l, "full, 2 of 2", full)
		refuse(t, l, "full, a third", 0, 90*time.Second, 100*time.Second, full)
	})
	t.Run("RetryAfterOfTheLongestWait", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		slow, fast, other := bucket(0.01, 1), bucket(0.1, 1), bucket(0.01, 5)
		take(t, l, "slow and fast, their last", slow, fast)
		// Both are empty: a retry can succeed once slow (100s) has a token,
		// not fast (10s).
		refuse(t, l, "fast, other and slow", 2, 90*time.Second, 100*time.Second, fast, other, slow)
		refuse(t, l, "slow, fast", 0, 90*time.Second, 100*time.Second, slow, fast)
		refuse(t, l, "fast alone", 0, 9*time.Second, 10*time.Second, fast)
		for i := range 5 {
			take(t, l, fmt.Sprintf("other, %d of 5: the refusals took none", i+1), other)
		}
	})
	t.Run("ConcurrentTakesStopAtBurst", func(t *testing.T) {
		t.Parallel()
		l, b := newLimiter(t), bucket(0.001, 50)
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				refused, _, err := l.Allow(t.Context(), b)
				if err != nil {
					t.Error(err)
				}
				if refused < 0 {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != 50 {
			t.Errorf("%d of 200 concurrent takes allowed from a burst of 50", allowed.Load())
		}
	})
	t.Run("ConcurrentSeveralStopAtTheSmallest", func(t *testing.T) {
		t.Parallel()
		// 200 callers, each with a bucket of its own (as users are) and two
		// shared ones (as a template is): the smaller shared one decides,
		// and the refused take nothing from the others.
		l, big, small := newLimiter(t), bucket(0.001, 300), bucket(0.001, 30)
		own := make([]quan.Bucket, 200)
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range own {
			own[i] = bucket(0.001, 1)
			wg.Go(func() {
				refused, _, err := l.Allow(t.Context(), own[i], big, small)
				if err != nil {
					t.Error(err)
				}
				switch refused {
				case -1:
					allowed.Add(1)
				case 2:
				default:
					t.Errorf("refused by %d, want small (2)", refused)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != 30 {
			t.Fatalf("%d of 200 concurrent takes allowed with a shared burst of 30", allowed.Load())
		}
		left := 0
		for range 300 {
			refused, _, err := l.Allow(t.Context(), big)
			if err != nil {
				t.Fatal(err)
			}
			if refused < 0 {
				left++
			}
		}
		if left != 270 {
			t.Errorf("big has %d tokens left after 30 takes from 300, want 270", left)
		}
		// The callers refused still hold their own token.
		holding := 0
		for i := range own {
			if refused, _, _ := l.Allow(t.Context(), own[i]); refused < 0 {
				holding++
			}
		}
		if holding != 170 {
			t.Errorf("%d of the 170 refused callers hold their own token, want all", holding)
		}
	})
}
