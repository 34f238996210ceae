package inmem

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

var (
	_ quan.Idempotency = (*Idempotency)(nil)
	_ quan.RateLimiter = (*RateLimiter)(nil)
)

// Idempotency is the in-process quan.Idempotency.
type Idempotency struct {
	Now quan.Clock // nil means time.Now

	mu    sync.Mutex
	keys  map[string]*idemEntry
	sweep time.Time
}

type idemEntry struct {
	replay  *quan.Replay // nil while running
	expires time.Time
}

// NewIdempotency returns an empty store of responses.
func NewIdempotency() *Idempotency { return &Idempotency{keys: map[string]*idemEntry{}} }

// Begin implements quan.Idempotency.
func (s *Idempotency) Begin(ctx context.Context, key string, running time.Duration) (quan.KeyState, *quan.Replay, error) {
	now := s.Now.UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if e := s.keys[key]; e != nil && now.Before(e.expires) {
		if e.replay == nil {
			return quan.KeyRunning, nil, nil
		}
		r := *e.replay
		return quan.KeyDone, &r, nil
	}
	s.keys[key] = &idemEntry{expires: now.Add(running)}
	return quan.KeyNew, nil, nil
}

// expire drops expired keys, at most once a minute.
func (s *Idempotency) expire(now time.Time) {
	if now.Sub(s.sweep) < time.Minute {
		return
	}
	s.sweep = now
	for k, e := range s.keys {
		if !now.Before(e.expires) {
			delete(s.keys, k)
		}
	}
}

// Complete implements quan.Idempotency.
func (s *Idempotency) Complete(ctx context.Context, key string, r quan.Replay, keep time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key] = &idemEntry{replay: &r, expires: s.Now.UTC().Add(keep)}
	return nil
}

// Abort implements quan.Idempotency.
func (s *Idempotency) Abort(ctx context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.keys[key]; e != nil && e.replay == nil {
		delete(s.keys, key)
	}
	return nil
}

// RateLimiter is the in-process quan.RateLimiter.
type RateLimiter struct {
	Now quan.Clock // nil means time.Now

	mu      sync.Mutex
	buckets map[string]*bucket
	sweep   time.Time
}

type bucket struct {
	tokens, rate, burst float64
	at                  time.Time
}

// NewRateLimiter returns a limiter with every bucket full.
func NewRateLimiter() *RateLimiter { return &RateLimiter{buckets: map[string]*bucket{}} }

// Allow implements quan.RateLimiter: under one lock it refills the
// buckets, and takes a token from each only if each has one.
func (l *RateLimiter) Allow(ctx context.Context, buckets ...quan.Bucket) (int, time.Duration, error) {
	if len(buckets) == 0 {
		return -1, 0, nil
	}
	now := l.Now.UTC()
	var small [4]*bucket
	bs := small[:0]
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.sweep) > time.Minute {
		// A bucket refilled to the brim is as good as none.
		l.sweep = now
		for k, b := range l.buckets {
			if b.tokens+now.Sub(b.at).Seconds()*b.rate >= b.burst {
				delete(l.buckets, k)
			}
		}
	}
	refused, wait := -1, time.Duration(0)
	for i, q := range buckets {
		b := l.buckets[q.Key]
		if b == nil {
			b = &bucket{tokens: float64(q.Burst), at: now}
			l.buckets[q.Key] = b
		}
		b.rate, b.burst = q.Rate, float64(q.Burst)
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
		b.at = now
		if b.tokens < 1 {
			if w := waitFor(1-b.tokens, b.rate); refused < 0 || w > wait {
				refused, wait = i, w
			}
		}
		bs = append(bs, b)
	}
	if refused >= 0 {
		return refused, wait, nil
	}
	for _, b := range bs {
		b.tokens--
	}
	return -1, 0, nil
}

// Peek implements quan.RateLimiter: the wait of q's bucket refilled to
// now, changing nothing.
func (l *RateLimiter) Peek(ctx context.Context, q quan.Bucket) (time.Duration, error) {
	now := l.Now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[q.Key]
	if b == nil {
		return 0, nil // full
	}
	tokens := math.Min(float64(q.Burst), b.tokens+now.Sub(b.at).Seconds()*q.Rate)
	if tokens >= 1 {
		return 0, nil
	}
	return waitFor(1-tokens, q.Rate), nil
}

// waitFor is how long a bucket refilling at rate a second takes to gain
// tokens, the longest Duration if it is longer.
func waitFor(tokens, rate float64) time.Duration {
	ns := tokens / rate * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
