package console

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// pingEvery is how often ServeEvents writes a comment on an idle stream,
// so that proxies and load balancers that cut idle connections (often at
// 30 or 60 s) leave it open.
const pingEvery = 15 * time.Second

// ServeEvents writes ch to w as a stream of Server-Sent Events: one
// "event: <event>" with its data, encode(v), per snapshot, flushed at
// once; a ": ping" comment every 15 seconds; and an "end" event (with data
// "{}", since browsers drop events without data) when ch closes. It
// returns nil when ch closes or the client goes away (r's context ends),
// and an error if w cannot flush or a write or encode fails; by then the
// response has begun, so the caller can only log it. The caller still owns
// ch: cancel the Watch that made it when ServeEvents returns.
//
// It lifts the server's write deadline for this response, since a stream
// outlives any WriteTimeout meant for ordinary requests.
func ServeEvents[V any](w http.ResponseWriter, r *http.Request, ch <-chan V, event string, encode func(V) ([]byte, error)) error {
	return serveEvents(w, r, ch, event, encode, pingEvery)
}

// serveEvents is ServeEvents with the ping period as a parameter, for
// tests.
func serveEvents[V any](w http.ResponseWriter, r *http.Request, ch <-chan V, event string, encode func(V) ([]byte, error), ping time.Duration) error {
	if strings.ContainsAny(event, "\r\n") {
		return fmt.Errorf("events: event name %q has a line break", event)
	}
	rc := http.NewResponseController(w)
	// Not every ResponseWriter has deadlines (httptest.ResponseRecorder);
	// a stream without one is still a stream.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("events: clear write deadline: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return fmt.Errorf("events: flush: %w", err)
	}

	t := time.NewTicker(ping)
	defer t.Stop()
	var buf bytes.Buffer
	for {
		buf.Reset()
		select {
		case <-r.Context().Done():
			return nil
		case <-t.C:
			buf.WriteString(": ping\n\n")
		case v, ok := <-ch:
			if !ok {
				buf.WriteString("event: end\ndata: {}\n\n")
				return write(r, w, rc, buf.Bytes())
			}
			data, err := encode(v)
			if err != nil {
				return fmt.Errorf("events: encode %s: %w", event, err)
			}
			appendEvent(&buf, event, data)
			t.Reset(ping) // an event is as good as a ping
		}
		if err := write(r, w, rc, buf.Bytes()); err != nil {
			return err
		}
	}
}

// appendEvent writes one event to buf. Data with line breaks (indented
// JSON) goes out as one "data:" line per line, which the browser joins
// again with "\n".
func appendEvent(buf *bytes.Buffer, event string, data []byte) {
	buf.WriteString("event: ")
	buf.WriteString(event)
	buf.WriteByte('\n')
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	for line := range bytes.Lines(data) {
		buf.WriteString("data: ")
		buf.Write(bytes.TrimRight(line, "\r\n"))
		buf.WriteByte('\n')
	}
	if len(data) == 0 {
		buf.WriteString("data: \n")
	}
	buf.WriteByte('\n')
}

// write sends b at once. A failure because the client went away is no
// error: that is how every stream ends sooner or later.
func write(r *http.Request, w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	_, err := w.Write(b)
	if err == nil {
		err = rc.Flush()
	}
	if err != nil && r.Context().Err() == nil {
		return fmt.Errorf("events: write: %w", err)
	}
	return nil
}
