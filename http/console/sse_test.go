package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type progress struct {
	Done int64 `json:"done"`
}

func encodeProgress(p progress) ([]byte, error) { return json.Marshal(p) }

// eventServer serves serveEvents over ch (made per request by open) on a
// real listener and reports each call's result on the returned channel.
func eventServer[V any](t *testing.T, open func(r *http.Request) (<-chan V, func()), encode func(V) ([]byte, error), ping time.Duration) (*httptest.Server, <-chan error) {
	t.Helper()
	results := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch, cancel := open(r)
		defer cancel()
		results <- serveEvents(w, r, ch, "progress", encode, ping)
	}))
	t.Cleanup(srv.Close)
	return srv, results
}

func get(t *testing.T, ctx context.Context, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	for k, want := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-store",
		"X-Accel-Buffering": "no",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	return resp
}

func result(t *testing.T, results <-chan error) error {
	t.Helper()
	select {
	case err := <-results:
		return err
	case <-time.After(within):
		t.Fatal("serveEvents did not return")
		return nil
	}
}

func TestServeEventsStream(t *testing.T) {
	t.Parallel()
	ch := make(chan progress) // unbuffered: each send is one event, in order
	srv, results := eventServer(t, func(*http.Request) (<-chan progress, func()) { return ch, func() {} }, encodeProgress, time.Hour)
	resp := get(t, t.Context(), srv.URL)
	go func() {
		for i := range int64(3) {
			ch <- progress{Done: (i + 1) * 100}
		}
		close(ch)
	}()
	body, err := io.ReadAll(resp.Body) // the stream ends after the end event
	if err != nil {
		t.Fatal(err)
	}
	want := "event: progress\ndata: {\"done\":100}\n\n" +
		"event: progress\ndata: {\"done\":200}\n\n" +
		"event: progress\ndata: {\"done\":300}\n\n" +
		"event: end\ndata: {}\n\n"
	if string(body) != want {
		t.Errorf("stream:\n%s\nwant:\n%s", body, want)
	}
	if err := result(t, results); err != nil {
		t.Errorf("serveEvents: %v", err)
	}
}

func TestServeEventsPingUntilClientLeaves(t *testing.T) {
	t.Parallel()
	idle := make(chan progress) // nothing ever comes
	srv, results := eventServer(t, func(*http.Request) (<-chan progress, func()) { return idle, func() {} }, encodeProgress, 5*time.Millisecond)
	ctx, leave := context.WithCancel(t.Context())
	defer leave()
	resp := get(t, ctx, srv.URL)
	lines := bufio.NewScanner(resp.Body)
	for pings := 0; pings < 2; {
		if !lines.Scan() {
			t.Fatalf("stream ended before two pings: %v", lines.Err())
		}
		switch lines.Text() {
		case ": ping":
			pings++
		case "":
		default:
			t.Fatalf("unexpected line %q on an idle stream", lines.Text())
		}
	}
	leave()
	if err := result(t, results); err != nil {
		t.Errorf("serveEvents after the client left: %v, want nil", err)
	}
}

func TestServeEventsEncodeError(t *testing.T) {
	t.Parallel()
	ch := make(chan progress, 1)
	ch <- progress{}
	boom := errors.New("boom")
	srv, results := eventServer(t, func(*http.Request) (<-chan progress, func()) { return ch, func() {} },
		func(progress) ([]byte, error) { return nil, boom }, time.Hour)
	resp := get(t, t.Context(), srv.URL)
	io.Copy(io.Discard, resp.Body)
	if err := result(t, results); !errors.Is(err, boom) {
		t.Errorf("serveEvents: %v, want the encode error", err)
	}
}

// TestServeEventsFromHub is the console's use: every viewer of a task's
// page streams the one poller's snapshots until the task is done.
func TestServeEventsFromHub(t *testing.T) {
	t.Parallel()
	var c counter
	h := &Hub[string, progress]{
		Fetch: func(ctx context.Context, task string) (progress, error) {
			n, err := c.fetch(ctx, task)
			return progress{Done: n}, err
		},
		Every: time.Millisecond,
		Final: func(p progress) bool { return p.Done >= 5 },
	}
	defer h.Close()
	srv, results := eventServer(t, func(r *http.Request) (<-chan progress, func()) {
		return h.Watch(r.Context(), r.URL.Query().Get("task"))
	}, encodeProgress, time.Hour)

	resp := get(t, t.Context(), srv.URL+"?task=7")
	lines := bufio.NewScanner(resp.Body)
	var events []string
	var last int64
	for lines.Scan() {
		line := lines.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok && events[len(events)-1] == "progress" {
			var p progress
			if err := json.Unmarshal([]byte(data), &p); err != nil {
				t.Fatalf("data %q: %v", data, err)
			}
			if p.Done <= last {
				t.Errorf("snapshot %d after %d", p.Done, last)
			}
			last = p.Done
		}
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, ev)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if len(events) < 2 || events[len(events)-1] != "end" || events[len(events)-2] != "progress" {
		t.Errorf("events %q: want progress events, then end", events)
	}
	if last != 5 {
		t.Errorf("last snapshot %d, want the final one, 5", last)
	}
	if err := result(t, results); err != nil {
		t.Errorf("serveEvents: %v", err)
	}
	waitFor(t, "Pollers() == 0", func() bool { return h.Pollers() == 0 })
}

func TestAppendEventMultiline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, data, want string }{
		{"OneLine", `{"a":1}`, "event: x\ndata: {\"a\":1}\n\n"},
		{"Indented", "{\n  \"a\": 1\r\n}\n", "event: x\ndata: {\ndata:   \"a\": 1\ndata: }\n\n"},
		{"Empty", "", "event: x\ndata: \n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			appendEvent(&buf, "x", []byte(tc.data))
			if buf.String() != tc.want {
				t.Errorf("got %q, want %q", buf.String(), tc.want)
			}
		})
	}
}

func TestServeEventsRefusesEventNameWithLineBreak(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	err := ServeEvents(rec, req, make(chan int), "a\ndata: x", func(int) ([]byte, error) { return nil, nil })
	if err == nil || rec.Body.Len() != 0 {
		t.Errorf("err %v, body %q; want an error and nothing written", err, rec.Body)
	}
}
