package http

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/quanhq/quan"
)

// Defaults of Limits. They hold a thousand slow clients and more: a
// connection costs the server some tens of KiB (BENCHMARKS.md), and
// every one that does not keep up is cut off by a deadline.
const (
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultIdleTimeout outlasts the idle timeout of the usual load
	// balancers and proxies (60 s), so that they close an idle
	// connection first rather than send on one quan is closing.
	DefaultIdleTimeout = 2 * time.Minute
	DefaultBodyMinRate = 1 << 10 // bytes a second
	DefaultBodyWindow  = 20 * time.Second
	DefaultMaxConns    = 4096
)

// ConnsRetryAfter is the Retry-After of the 503 a connection past
// Limits.MaxConns gets: slots free as other clients finish or reach
// their deadlines.
const ConnsRetryAfter = time.Second

// Limits bound what slow, idle and too many clients may hold of the
// server. Each zero (or negative) field takes its default.
type Limits struct {
	// HeaderTimeout is how long a client has to send a request's line
	// and headers, from its first byte (a new connection's wait for it
	// counts too). Default DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers; a request over
	// it is answered 431. Default DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request before it is closed. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// BodyMinRate and BodyWindow are the pace a request body must keep:
	// while the server reads it, at least BodyMinRate×BodyWindow bytes
	// must arrive in each BodyWindow the server spends waiting for them.
	// A client below it is cut off (408, and the connection closed); an
	// upload of any size at or above it goes through, however long it
	// takes. Time the server spends on the data between reads is not
	// counted. Defaults DefaultBodyMinRate (bytes a second) and
	// DefaultBodyWindow.
	BodyMinRate int
	BodyWindow  time.Duration
	// MaxConns is how many client connections may be open at once. A
	// connection past it is answered at once, before its request is
	// read, with 503 and Retry-After (ConnsRetryAfter), and closed; those
	// open keep being served. Default DefaultMaxConns.
	MaxConns int
}

// WithDefaults returns l with every zero or negative field at its
// default.
func (l Limits) WithDefaults() Limits {
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.BodyMinRate <= 0 {
		l.BodyMinRate = DefaultBodyMinRate
	}
	if l.BodyWindow <= 0 {
		l.BodyWindow = DefaultBodyWindow
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	return l
}

// bodyWindowBytes is how many bytes a body must bring in each window: at
// least one.
func (l Limits) bodyWindowBytes() int64 {
	return max(int64(float64(l.BodyMinRate)*l.BodyWindow.Seconds()), 1)
}

// pacedBodies makes every request body keep the pace of s.Limits (see
// Limits.BodyMinRate) by moving the connection's read deadline as the
// body arrives: no deadline bounds the whole request, so a large upload
// on a slow but steady link goes through.
//
// It must wrap the handler that net/http calls: the deadlines are the
// connection's (http.ResponseController).
func (s *Server) pacedBodies(next http.Handler) http.Handler {
	l := s.Limits.WithDefaults()
	perWindow := l.bodyWindowBytes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// The first window starts now: it bounds too what net/http
		// discards of a body the handler leaves unread.
		if err := rc.SetReadDeadline(time.Now().Add(l.BodyWindow)); err != nil {
			next.ServeHTTP(w, r) // a connection without deadlines: nothing to pace
			return
		}
		b := &pacedBody{body: r.Body, rc: rc, perWindow: perWindow, window: l.BodyWindow, rate: l.BodyMinRate}
		r2 := r.WithContext(r.Context()) // net/http keeps r.Body: its own type tells it what is left
		r2.Body = b
		next.ServeHTTP(w, r2)
		if !b.done {
			// What is left is read by net/http to reuse the connection,
			// or not at all: one more window for it.
			rc.SetReadDeadline(time.Now().Add(l.BodyWindow))
		}
	})
}

// minDeadline is the least time a read of the body is given, however
// little of its window is left: when a read reaches the body's end,
// net/http starts reading the connection in the background under the
// deadline it finds, until pacedBody clears it just after; a deadline
// passing in between would cancel the request.
const minDeadline = 100 * time.Millisecond

// pacedBody is a request body that must bring perWindow bytes in each
// window of time spent waiting in Read.
type pacedBody struct {
	body      io.ReadCloser
	rc        *http.ResponseController
	perWindow int64
	window    time.Duration
	rate      int

	got    int64         // bytes of the current window
	waited time.Duration // time spent in Read in the current window
	done   bool          // the body ended, or failed
	err    error         // the error that cut it off
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return b.body.Read(p)
	}
	start := time.Now()
	left := max(b.window-b.waited, minDeadline)
	b.rc.SetReadDeadline(start.Add(left))
	n, err := b.body.Read(p)
	b.waited += time.Since(start)
	b.got += int64(n)
	if b.got >= b.perWindow {
		b.got, b.waited = 0, 0
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.done = true
		b.err = &quan.Error{Code: quan.ETOOSLOW, Message: fmt.Sprintf(
			"the request body came slower than the server's minimum of %d bytes a second (%d bytes in each %s): send it faster",
			b.rate, b.perWindow, b.window)}
		return n, b.err
	}
	// The end, or the client went: the connection reads on (its
	// background read, the next request) under the server's deadlines.
	b.done = true
	b.rc.SetReadDeadline(time.Time{})
	return n, err
}

func (b *pacedBody) Close() error { return b.body.Close() }
