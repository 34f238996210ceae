package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// maxRequestID bounds an X-Request-ID a client sends.
const maxRequestID = 128

// logEntry is what the access log line of one request gathers on its way:
// the route pattern matched, the status and bytes written, and the
// backend that was down when it was answered 503 (PrepareError).
type logEntry struct {
	route   string
	status  int
	bytes   int64
	backend string
}

type logEntryKey struct{}

func logEntryOf(ctx context.Context) *logEntry {
	e, _ := ctx.Value(logEntryKey{}).(*logEntry)
	return e
}

// accessLog gives every request an id (the client's X-Request-ID if it is
// printable and at most maxRequestID bytes, else a new one), returns it in
// X-Request-ID, and logs one line when the request ends: method, route
// pattern (not the path, which carries ids), status, duration, bytes and
// the id, and the backend that was down for a 503; and hands route,
// status and duration to Observe, and the backend to Unavailable, if set.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if !validRequestID(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-ID", id)
		e := &logEntry{status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(&countingWriter{ResponseWriter: w, e: e}, r.WithContext(context.WithValue(r.Context(), logEntryKey{}, e)))
		if e.backend != "" && s.Unavailable != nil {
			s.Unavailable(e.backend)
		}
		logger := s.logger()
		logged := logger.Enabled(r.Context(), slog.LevelInfo)
		if !logged && s.Observe == nil {
			return
		}
		took := time.Since(start)
		route := e.route
		if route == "" {
			route = "unmatched"
		}
		if s.Observe != nil {
			s.Observe(route, e.status, took)
		}
		if !logged {
			return
		}
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", route), slog.Int("status", e.status),
			slog.Duration("took", took), slog.Int64("bytes", e.bytes), slog.String("request_id", id)}
		if e.backend != "" {
			attrs = append(attrs, slog.String("backend", e.backend))
		}
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	})
}

// validRequestID accepts printable ASCII ids of at most maxRequestID
// bytes, so a client's id cannot forge log lines.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := range len(id) {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// countingWriter notes the status and the bytes of a response.
type countingWriter struct {
	http.ResponseWriter
	e     *logEntry
	wrote bool
}

func (w *countingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.e.status, w.wrote = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.e.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
