package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/codes"
	"github.com/quanhq/quan/disk"
	"github.com/quanhq/quan/facts"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/report"
	"github.com/quanhq/quan/rules"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/shops"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/stats"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
	"github.com/quanhq/quan/wallet"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef-test")

// testNow is the fixed clock of every test server: templates in the tests
// open their issue window around it.
var testNow = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

type testServer struct {
	*httptest.Server
	api    *qhttp.Server
	tokens *qhttp.Tokens
	store  *sqlite.Store
	db     *sqlite.DB    // the store's, which a test may close to take it down
	runner *tasks.Runner // the distributor, which setup may change
	dir    string

	mu  sync.Mutex // guards now, which the server's goroutines read
	now time.Time

	// open opens a task's file for the distributor; tests may wrap it.
	open func(ctx context.Context, t *quan.Task) (quan.RowReader, error)

	cache  *inmem.Cache    // shared by claims and distributions
	claims *claims.Service // with newClaimServer

	keys     *apikeys.Service
	orderKey string // the platform's key with the settlement scope: the order system's
}

// newTestServer serves the API over a fresh SQLite store in a temp dir.
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return newServer(t, nil)
}

// newServer is newTestServer; setup, if given, may change the server's
// use cases before it serves.
func newServer(t *testing.T, setup func(ts *testServer)) *testServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := sqlite.NewStore(db)
	ts := &testServer{now: testNow, store: store, db: db, dir: dir, open: openSheet}
	tokens, err := qhttp.NewTokens(testSecret, ts.clock)
	if err != nil {
		t.Fatal(err)
	}
	ts.tokens = tokens
	clock := ts.clock
	files := &disk.Files{Dir: dir}
	ts.cache = inmem.NewCache()
	dist := &tasks.Runner{
		Store:        store,
		Templates:    store,
		Coupons:      store,
		Cache:        ts.cache,
		Open:         func(ctx context.Context, t *quan.Task) (quan.RowReader, error) { return ts.open(ctx, t) },
		Report:       report.Failures{},
		ReportPath:   files.ReportPath,
		Owner:        "test-runner",
		PollInterval: 10 * time.Millisecond,
		Now:          clock,
	}
	ts.runner = dist
	ts.api = &qhttp.Server{
		Templates: &templates.Service{Store: store, Cache: ts.cache, Now: clock},
		Tasks: &tasks.Service{
			Tasks:     store,
			Templates: store,
			Files:     files,
			Check:     checkSheet,
			Count: func(ctx context.Context, path, name string) (int64, error) {
				return sheet.Count(ctx, path, sheet.Options{Sheet: name, MaxRows: testMaxRows})
			},
			Wake:      dist.Wake,
			Stalls:    dist,
			Now:       clock,
			ChunkSize: 4, // several chunks even in small files
			Outbox:    store,
		},
		Tokens:      tokens,
		Checks:      map[string]func(context.Context) error{"store": db.Ping},
		Now:         clock,
		Wallet:      &wallet.Service{Coupons: store, Archiver: store, Templates: store, Now: clock},
		Staff:       &wallet.Staff{Coupons: store, Now: clock},
		Notices:     &notify.Service{Store: store, Contacts: store, Now: clock},
		Codes:       &codes.Service{Codes: store, Templates: store, Cache: ts.cache, Now: clock, Chunk: 10},
		Stats:       &stats.Service{Store: store, Now: clock},
		Reminders:   &notify.Reminders{Store: store, Templates: store, Now: clock},
		CodesExport: report.Codes{},
		Idempotency: inmem.NewIdempotency(),
	}
	ts.api.NotificationFailuresExport = report.NotificationFailures{}
	// Contacts files are kept and read like distribution files.
	ts.api.Notices.Files = files
	ts.api.Notices.OpenRows = func(path string) (quan.RowReader, error) { return sheet.OpenRows(path, sheet.Options{}) }
	// So are attributes files, every column of them.
	ts.api.Facts = &facts.Service{Store: store, Now: clock, Files: files,
		OpenRows: func(path string) (quan.OthersReader, error) { return sheet.OpenRows(path, sheet.Options{Others: true}) }}
	// Tasks may target a segment of the users whose facts are on file,
	// and templates have rules, as cmd/quan wires them.
	engine, err := rules.New(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts.api.Tasks.Rules, ts.api.Tasks.Facts = engine, store
	ts.api.Shops = &shops.Service{Store: store, Now: clock}
	ts.keys = &apikeys.Service{Keys: store, Secrets: store, Now: clock}
	ts.api.Keys = ts.keys
	ts.api.Wallet.Refunds = store
	if _, ts.orderKey, err = ts.keys.Create(ctx, quan.Identity{Role: quan.RoleAdmin}, apikeys.NewKey{Name: "orders", Scopes: []quan.KeyScope{quan.ScopeSettlement}}); err != nil {
		t.Fatal(err)
	}
	book := &templates.RuleBook{Engine: engine, Templates: store, Versions: store}
	ts.api.Templates.Rules, ts.api.Templates.Versions, ts.api.Templates.Book = engine, store, book
	ts.api.Wallet.Rules, ts.api.Wallet.Facts = book, ts.api.Facts
	ts.api.Codes.Rules, ts.api.Codes.Facts = book, ts.api.Facts
	dist.Rules, dist.Facts = book, store
	// The claim centre needs none of the claims' bus and cache.
	ts.api.Centre = &claims.Service{Templates: store, Coupons: store, Now: clock,
		Rules: book, Facts: ts.api.Facts, Shops: ts.api.Shops}
	if setup != nil {
		setup(ts)
	}
	ts.Server = httptest.NewServer(ts.api.Handler())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		dist.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		ts.api.Codes.Wait()
		ts.Close()
	})
	return ts
}

// clock is the test server's time.
func (ts *testServer) clock() time.Time {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.now
}

// setNow moves the test server's clock.
func (ts *testServer) setNow(t time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.now = t
}

func (ts *testServer) token(t *testing.T, id quan.Identity) string {
	t.Helper()
	tok, err := ts.tokens.Mint(id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// settle posts a settlement (path: /api/v1/orders/{order}/lock, redeem,
// release or refund) as the order system does: with its service key, for
// the user whose token userToken is, named as userId in body (a map or
// nil).
func (ts *testServer) settle(t *testing.T, userToken, path string, body any) response {
	t.Helper()
	who, err := ts.tokens.Verify(userToken)
	if err != nil {
		t.Fatal(err)
	}
	b := map[string]any{}
	switch v := body.(type) {
	case nil:
	case map[string]any:
		for k, x := range v {
			b[k] = x
		}
	default:
		t.Fatalf("settle: a body of %T", body)
	}
	b["userId"] = who.UserID
	return ts.do(t, "POST", path, ts.orderKey, b)
}

// key makes a service key as an admin would and returns its secret.
func (ts *testServer) key(t *testing.T, name string, shop int64, scopes ...quan.KeyScope) string {
	t.Helper()
	_, secret, err := ts.keys.Create(t.Context(), quan.Identity{Role: quan.RoleAdmin}, apikeys.NewKey{Name: name, ShopNo: shop, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func (ts *testServer) merchant(t *testing.T, shop int64) string {
	return ts.token(t, quan.Identity{Role: quan.RoleMerchant, ShopNo: shop})
}

// response is a decoded reply.
type response struct {
	Status  int
	Header  http.Header
	Body    []byte
	Problem qhttp.Problem
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// hasField reports whether the problem names field among its errors.
func (r response) hasField(field string) bool {
	for _, f := range r.Problem.Errors {
		if f.Field == field {
			return true
		}
	}
	return false
}

func (ts *testServer) do(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
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
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: b}
	if res.StatusCode >= 400 {
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%s %s: status %d with Content-Type %q, want application/problem+json; body %s", method, path, res.StatusCode, ct, b)
		}
		r.decode(t, &r.Problem)
		if r.Problem.Status != res.StatusCode || r.Problem.Code == "" {
			t.Fatalf("%s %s: problem %+v does not match status %d", method, path, r.Problem, res.StatusCode)
		}
	}
	return r
}

// want fails unless r has the status and, for errors, the code.
func (r response) want(t *testing.T, status int, code string) {
	t.Helper()
	if r.Status != status || r.Problem.Code != code {
		t.Fatalf("got %d %q (%s), want %d %q", r.Status, r.Problem.Code, r.Body, status, code)
	}
}

// validTemplate returns a valid create body of a threshold coupon
// (满100减10) whose issue window is open at testNow.
func validTemplate() map[string]any {
	return map[string]any{
		"name":         "满100减10",
		"description":  "autumn sale",
		"kind":         "threshold",
		"rule":         map[string]any{"amount": 1000, "threshold": 10000},
		"source":       "shop",
		"scope":        map[string]any{"type": "all"},
		"issueStart":   testNow.Add(-time.Hour).Format(time.RFC3339),
		"issueEnd":     testNow.Add(30 * 24 * time.Hour).Format(time.RFC3339),
		"validity":     map[string]any{"type": "relative", "hours": 72},
		"perUserLimit": 1,
		"stock":        1000,
	}
}

// create makes a template for token's shop and returns it.
func (ts *testServer) create(t *testing.T, token string, body map[string]any) quan.Template {
	t.Helper()
	r := ts.do(t, "POST", "/api/v1/templates", token, body)
	r.want(t, http.StatusCreated, "")
	var tpl quan.Template
	r.decode(t, &tpl)
	return tpl
}

func openSheet(ctx context.Context, t *quan.Task) (quan.RowReader, error) {
	return sheet.OpenRows(t.FilePath, sheet.Options{Sheet: t.Sheet, MaxRows: testMaxRows})
}

// testMaxRows is the row limit of test servers, small to test it.
const testMaxRows = 1000

func checkSheet(ctx context.Context, path, fileName, name string) error {
	return sheet.Check(ctx, path, sheet.Options{Name: fileName, Sheet: name, MaxRows: testMaxRows})
}

// assertNoUploads fails if any uploaded file was left in the data folder.
func assertNoUploads(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, "uploads"))
	if len(entries) > 0 {
		t.Fatalf("%d files left in uploads", len(entries))
	}
}
