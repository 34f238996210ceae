package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects log lines from concurrent handlers.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRequestIDAndAccessLog: every response carries an X-Request-ID (the
// client's if it is a sane one), and every request leaves one log line
// with the route pattern, never the path's ids.
func TestRequestIDAndAccessLog(t *testing.T) {
	logs := &logBuffer{}
	ts := newServer(t, func(ts *testServer) {
		ts.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	get := func(id string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/templates/424242", nil)
		if id != "" {
			req.Header.Set("X-Request-ID", id)
		}
		req.Header.Set("Authorization", "Bearer "+ts.merchant(t, 1))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if got := get("order-123.abc").Header.Get("X-Request-ID"); got != "order-123.abc" {
		t.Errorf("a client's id came back as %q", got)
	}
	for _, bad := range []string{"", "two words", "tab\there", "订单", strings.Repeat("x", 129)} {
		got := get(bad).Header.Get("X-Request-ID")
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(got) {
			t.Errorf("X-Request-ID %q answered %q, want a new id", bad, got)
		}
	}
	line := regexp.MustCompile(`msg=request method=GET route="GET /api/v1/templates/\{id\}" status=404 took=\S+ bytes=\d+ request_id=order-123\.abc`)
	if !line.MatchString(logs.String()) {
		t.Errorf("no access log line in:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "424242") {
		t.Errorf("the path's id is in the log:\n%s", logs.String())
	}
}

// TestReadyzNamesFailedDependency: a failing check makes /readyz 503 and
// names the dependency, with the reason in the log only.
func TestReadyzNamesFailedDependency(t *testing.T) {
	logs := &logBuffer{}
	ts := newServer(t, func(ts *testServer) {
		ts.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
		ts.api.Checks["cache"] = func(context.Context) error { return errors.New("dial tcp 10.9.8.7:6379: refused") }
	})
	res, err := http.Get(ts.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusServiceUnavailable || body.Status != "unavailable" ||
		body.Checks["cache"] != "unavailable" || body.Checks["store"] != "ok" {
		t.Fatalf("readyz %d %+v", res.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "10.9.8.7") {
		t.Errorf("the reason is not in the log:\n%s", logs.String())
	}
}

// TestObserve: the metrics hook sees each request once as it ends, by its
// route pattern (never the path's ids) and status, and "unmatched" for a
// path no route takes.
func TestObserve(t *testing.T) {
	type seen struct {
		route  string
		status int
	}
	var (
		mu  sync.Mutex
		got []seen
	)
	ts := newServer(t, func(ts *testServer) {
		ts.api.Observe = func(route string, status int, took time.Duration) {
			if took <= 0 {
				t.Errorf("%s %d took %v", route, status, took)
			}
			mu.Lock()
			got = append(got, seen{route, status})
			mu.Unlock()
		}
	})
	for _, path := range []string{"/api/v1/templates/424242", "/api/v1/nothing-here"} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+ts.merchant(t, 1))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	want := []seen{{"GET /api/v1/templates/{id}", http.StatusNotFound}, {"unmatched", http.StatusNotFound}}
	if !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}
