package http_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/quanhq/quan"
)

// TestStoreDownAnswers503: with the store down (closed), every route of
// the API answers without a 500: those that need the store answer 503
// unavailable, naming the store, with Retry-After; the access log line
// names the backend and Server.Unavailable counts it.
func TestStoreDownAnswers503(t *testing.T) {
	logs := &logBuffer{}
	var mu sync.Mutex
	counted := map[string]int{}
	ts := newServer(t, func(ts *testServer) {
		ts.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
		ts.api.Unavailable = func(backend string) {
			mu.Lock()
			defer mu.Unlock()
			counted[backend]++
		}
	})
	merchant := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, merchant, 10, 1)
	ts.db.Close()

	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	user := ts.user(t, 7)
	// Routes a store outage must answer 503, each as its caller sends it.
	must := map[string]bool{
		"GET /api/v1/templates": true, "GET /api/v1/templates/{id}": true, "POST /api/v1/templates": true,
		"POST /api/v1/templates/{id}/pause": true, "GET /api/v1/tasks": true, "GET /api/v1/tasks/{id}": true,
		"GET /api/v1/me/coupons": true, "POST /api/v1/settlement/quote": true, "POST /api/v1/orders/{order}/lock": true,
		"GET /api/v1/stats": true, "GET /api/v1/me/inbox": true,
	}
	bodies := map[string]any{
		"POST /api/v1/templates":           validTemplate(),
		"POST /api/v1/settlement/quote":    map[string]any{"items": order(20_000)},
		"POST /api/v1/orders/{order}/lock": map[string]any{"userId": 7, "items": order(20_000), "couponIds": []int64{1}, "expectedDiscount": 1000},
	}
	// Path values of the right form, so that requests reach the store.
	fill := strings.NewReplacer("{id}", strconv.FormatInt(tpl.ID, 10), "{order}", "order-1",
		"{code}", "ABCDEFGHJKMNPQRS", "{shopNo}", "1")
	seen := 0
	for _, route := range ts.api.Routes() {
		method, pattern, _ := strings.Cut(route, " ")
		path := fill.Replace(pattern)
		token := admin
		if strings.Contains(path, "/me/") || strings.HasSuffix(path, "/claim") || strings.Contains(path, "/settlement/") ||
			strings.Contains(path, "/codes/redeem") || strings.HasSuffix(path, "/reminders") {
			token = user
		}
		if strings.Contains(path, "/orders/") {
			token = ts.orderKey // settlement is the order system's
		}
		if strings.HasPrefix(path, "/api/v1/templates") && method != "GET" && !strings.HasSuffix(path, "/reminders") {
			token = merchant
		}
		var body any
		if b, ok := bodies[route]; ok {
			body = b
		} else if method == "POST" || method == "PUT" || method == "PATCH" {
			body = map[string]any{}
		}
		r := ts.doRaw(t, method, path, token, body)
		switch {
		case r.Status == http.StatusInternalServerError:
			t.Errorf("%s: 500 with the store down: %s", route, r.Body)
		case r.Status == http.StatusServiceUnavailable && route != "GET /readyz":
			seen++
			if r.Problem.Code != quan.EUNAVAILABLE || !strings.Contains(r.Problem.Detail, "store") {
				t.Errorf("%s: 503 %+v, want code unavailable naming the store", route, r.Problem)
			}
			if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("%s: Retry-After %q, want whole seconds", route, r.Header.Get("Retry-After"))
			}
		case must[route]:
			t.Errorf("%s: %d %s, want 503 unavailable", route, r.Status, r.Body)
		}
	}
	if seen < len(must) {
		t.Errorf("%d routes answered 503, want at least %d", seen, len(must))
	}
	mu.Lock()
	if counted[quan.BackendStore] != seen {
		t.Errorf("Unavailable counted %v, want %d for the store", counted, seen)
	}
	mu.Unlock()
	if !strings.Contains(logs.String(), "status=503") || !strings.Contains(logs.String(), "backend=store") {
		t.Errorf("no access log line names the store:\n%s", logs.String())
	}
}

// doRaw is do without its checks of a problem's form, for routes that
// answer something other than JSON.
func (ts *testServer) doRaw(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := response{Status: res.StatusCode, Header: res.Header, Body: b}
	if res.Header.Get("Content-Type") == "application/problem+json" {
		r.decode(t, &r.Problem)
	}
	return r
}
