package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// maxIdempotencyKey bounds the length of an Idempotency-Key.
const maxIdempotencyKey = 255

// idempotencyKeyProblem says what is wrong with an Idempotency-Key, ""
// if nothing: it is at most maxIdempotencyKey characters of printable
// ASCII (a UUID, say), as the header's draft standard has it.
func idempotencyKeyProblem(key string) string {
	if len(key) > maxIdempotencyKey {
		return fmt.Sprintf("at most %d characters", maxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < ' ' || c > '~' {
			return fmt.Sprintf("holds the byte %#x at %d: printable ASCII only, such as a UUID", c, i)
		}
	}
	return ""
}

// idempotencyRunning is how long a key stays taken by a request that
// neither completes nor aborts (its process died): then a retry runs.
// A claim's is seconds: a claim is idempotent by its key in the claim
// service itself (quan.KeyedClaimID), so a retry may run while a stalled
// first try still does, and a dead process's mark must not hold a user's
// retry for long.
const (
	idempotencyRunning      = 5 * time.Minute
	claimIdempotencyRunning = 3 * time.Second
)

// idempotent runs a POST with an Idempotency-Key once: the same key (of
// the same caller) with the same method, path and body (fingerprint)
// within 24 h replays the first response; with another body it is 422
// idempotency_mismatch; while the first runs, a second waits for its
// response (409 if that takes over 10 s). Only the answers of a request
// that started executing are kept (kept): a refusal decided before, or an
// error of the servers, frees the key, and a retry is decided afresh.
func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost || key == "" {
			next.ServeHTTP(w, r)
			return
		}
		who, err := identity(r)
		if err != nil {
			next.ServeHTTP(w, r) // the handler answers 401
			return
		}
		if p := idempotencyKeyProblem(key); p != "" {
			// Refused even without an Idempotency store: a claim keys
			// its id with it (quan.KeyedClaimID).
			s.writeError(w, r, &quan.Error{Code: quan.EINVALID, Message: "the Idempotency-Key is invalid",
				Fields: []quan.FieldError{{Field: "Idempotency-Key", Message: p}}})
			return
		}
		if s.Idempotency == nil {
			next.ServeHTTP(w, r)
			return
		}
		scoped := who.String() + " " + key

		running := idempotencyRunning
		if strings.HasSuffix(r.URL.Path, "/claim") {
			running = claimIdempotencyRunning
		}
		ctx := context.WithoutCancel(r.Context())
		deadline := time.Now().Add(10 * time.Second)
		for {
			state, replay, err := s.Idempotency.Begin(ctx, scoped, running)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			switch state {
			case quan.KeyNew:
				s.runOnce(w, r, next, ctx, scoped)
				return
			case quan.KeyDone:
				fp := newFingerprint(r)
				_, err := io.Copy(fp, r.Body)
				sum := fp.Sum()
				if err != nil {
					s.writeError(w, r, quan.Errorf(quan.EINVALID, "read the request body: %v", err))
					return
				}
				if sum != replay.Fingerprint {
					s.writeError(w, r, quan.Errorf(quan.EIDEMMISMATCH,
						"Idempotency-Key %q was used with another request; use a new key for a new request", key))
					return
				}
				for k, v := range replay.Header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Idempotent-Replayed", "true")
				w.WriteHeader(replay.Status)
				w.Write(replay.Body)
				return
			}
			if time.Now().After(deadline) {
				s.writeError(w, r, quan.Errorf(quan.ECONFLICT, "a request with Idempotency-Key %q is still running; try again", key))
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// runOnce runs the request that took the key and keeps its response, if
// kept says so; else it frees the key.
func (s *Server) runOnce(w http.ResponseWriter, r *http.Request, next http.Handler, ctx context.Context, key string) {
	fp := newFingerprint(r)
	defer fp.Close()
	body := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(body, fp), body}
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	next.ServeHTTP(rec, r)
	if !kept(rec.status) {
		if err := s.Idempotency.Abort(ctx, key); err != nil {
			s.logger().Warn("free an idempotency key", "err", err)
		}
		return
	}
	io.Copy(fp, body) // what the handler left unread counts too
	replay := quan.Replay{Fingerprint: fp.Sum(), Status: rec.status, Body: rec.body.Bytes(), Header: map[string]string{}}
	for _, h := range []string{"Content-Type", "Location", "Retry-After"} {
		if v := rec.Header().Get(h); v != "" {
			replay.Header[h] = v
		}
	}
	if err := s.Idempotency.Complete(ctx, key, replay, quan.IdempotencyTTL); err != nil {
		s.logger().Warn("keep an idempotent response", "err", err)
	}
}

// kept reports whether the answer of status is kept for the retries of
// its request. Stripe's rule: a result is kept once the operation started
// executing, whatever it was (a 2xx, or a 409 the state decided); the
// refusals decided before it say nothing was done, and are not, so that a
// retry is decided afresh: the input refused (400 invalid, 413 too large,
// 422 the key's own mismatch), the caller refused (401, 403), nothing to
// act on (404: a template that does not exist, or not yet; 405), a rate
// limit (429: a retry after its Retry-After runs), and the errors of the
// servers (500 and above, 503 unavailable among them: nothing was done).
// statusOf maps each code to one of these statuses, so the status tells.
func kept(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity,
		http.StatusTooManyRequests:
		return false
	}
	return status < http.StatusInternalServerError
}

// recorder passes a response through and keeps a copy.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}
