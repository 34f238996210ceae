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

// RateLimiter is a token bucket per key, in the process or in Redis:
// rate tokens a second, up to burst.
type RateLimiter interface {
	// Allow takes a token from the bucket of key, or reports how long
	// until one is there.
	Allow(ctx context.Context, key string, rate float64, burst int) (ok bool, retryAfter time.Duration, err error)
}
