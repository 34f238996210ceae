package quan

import (
	"context"
	"time"
)

// IdempotencyTTL is how long a response is kept for replay under its
// Idempotency-Key.
const IdempotencyTTL = 24 * time.Hour

// Replay is a response kept under an Idempotency-Key: the request's
// fingerprint and what was answered.
type Replay struct {
	Fingerprint string            `json:"fp"`
	Status      int               `json:"status"`
	Header      map[string]string `json:"header,omitempty"`
	Body        []byte            `json:"body,omitempty"`
}

// KeyState is where a key is.
type KeyState int

// Key states.
const (
	KeyNew     KeyState = iota // nobody used it: the caller runs the request
	KeyRunning                 // another request with it runs now
	KeyDone                    // its response is kept: replay it
)

// Idempotency keeps the responses of requests by their Idempotency-Key,
// in the process or in Redis, so that a retried request is answered as
// the first was and runs once.
type Idempotency interface {
	// Begin takes key for a request about to run: KeyNew, and the key is
	// marked running for at most running (a process that dies mid-request
	// frees it then); KeyRunning if another holds it; KeyDone with the
	// kept response. Of concurrent Begins with one key, exactly one gets
	// KeyNew.
	Begin(ctx context.Context, key string, running time.Duration) (KeyState, *Replay, error)
	// Complete keeps r under key for keep, ending its running mark.
	Complete(ctx context.Context, key string, r Replay, keep time.Duration) error
	// Abort frees a key whose request failed in a way worth retrying.
	Abort(ctx context.Context, key string) error
}

// Bucket names a token bucket of a RateLimiter and how it fills: Rate
// tokens a second (positive), up to Burst (at least 1). A bucket never
// used, or not for long, is full.
type Bucket struct {
	Key   string
	Rate  float64
	Burst int
}

// RateLimiter is a token bucket per key, in the process or in Redis.
type RateLimiter interface {
	// Allow takes one token from each of buckets, all or none, in one
	// call (one round trip to Redis), so that a request limited several
	// ways (its user's bucket and its template's) pays once. When every bucket
	// holds a token it takes them and returns refused -1. Otherwise it
	// takes none and returns the index in buckets of one that has no
	// token, the one of them that takes longest to get one, and that wait:
	// the earliest the same call could succeed. The keys of one call must
	// differ. No buckets is allowed: -1.
	Allow(ctx context.Context, buckets ...Bucket) (refused int, retryAfter time.Duration, err error)
	// Peek returns how long b takes to hold a token: 0 when it holds one
	// now, else the wait Allow(b) would answer. It takes none, and
	// changes no bucket: a limit that counts only some requests (wrong
	// promo codes) asks it first, to refuse every request while the
	// bucket is empty, and takes with Allow only when a request counts.
	Peek(ctx context.Context, b Bucket) (time.Duration, error)
}
