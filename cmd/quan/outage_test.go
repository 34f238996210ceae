package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/internal/testrig/fault"
)

// answer is what the API answered one request.
type answer struct {
	status  int
	header  http.Header
	problem qhttp.Problem
	body    []byte
}

// call sends a request to base with token and returns the answer.
func call(t *testing.T, client *http.Client, method, url, token string, body []byte, contentType string) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	a.body, _ = io.ReadAll(res.Body)
	if res.Header.Get("Content-Type") == "application/problem+json" {
		json.Unmarshal(a.body, &a.problem)
	}
	return a
}

// wantUnavailable fails t unless a is a 503 unavailable naming backend
// with a Retry-After of whole seconds.
func wantUnavailable(t *testing.T, what string, a answer, backend string) {
	t.Helper()
	if a.status != http.StatusServiceUnavailable || a.problem.Code != quan.EUNAVAILABLE || !strings.Contains(a.problem.Detail, backend) {
		t.Errorf("%s: %d %s, want 503 unavailable naming the %s", what, a.status, a.body, backend)
		return
	}
	if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("%s: Retry-After %q, want whole seconds", what, a.header.Get("Retry-After"))
	}
}

// until calls f until it returns "" or bound passes, and fails t
// with f's last complaint then.
func until(t *testing.T, bound time.Duration, f func() string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		why := f()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", bound, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outageSite is a `quan serve` under test, with its tokens and a
// template users claim.
type outageSite struct {
	t        *testing.T
	srv      *ServeCommand
	logs     *syncBuffer
	client   *http.Client
	tpl      *quan.Template
	merchant string
	user     func(id int64) string // a user's token
}

func startOutageSite(t *testing.T, env map[string]string) *outageSite {
	t.Helper()
	env["QUAN_LOG_LEVEL"] = "info"
	env["QUAN_TASK_POLL"] = "50ms"
	srv, logs := startServeLogged(t, env)
	tpl, err := srv.App().CreateDemoTemplate(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	s := &outageSite{t: t, srv: srv, logs: logs, client: &http.Client{Timeout: time.Minute}, tpl: tpl,
		merchant: strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))}
	t.Cleanup(s.client.CloseIdleConnections)
	s.user = func(id int64) string {
		return strings.TrimSpace(runQuan(t, env, fmt.Sprintf("token --role user --user %d", id)))
	}
	return s
}

// claim claims the site's template for user.
func (s *outageSite) claim(user int64) answer {
	s.t.Helper()
	return call(s.t, s.client, "POST", fmt.Sprintf("%s/api/v1/templates/%d/claim", s.srv.URL(), s.tpl.ID), s.user(user), nil, "")
}

// upload starts a distribution of the site's template to users.
func (s *outageSite) upload(users ...int64) answer {
	s.t.Helper()
	content := "userId\n"
	for _, u := range users {
		content += strconv.FormatInt(u, 10) + "\n"
	}
	var body bytes.Buffer
	ct := newMultipart(&body, map[string]string{"name": "outage", "templateId": strconv.FormatInt(s.tpl.ID, 10)}, "users.csv", content)
	return call(s.t, s.client, "POST", s.srv.URL()+"/api/v1/tasks", s.merchant, body.Bytes(), ct)
}

// task reads task id as the API shows it.
func (s *outageSite) task(id int64) (answer, quan.Task) {
	s.t.Helper()
	a := call(s.t, s.client, "GET", fmt.Sprintf("%s/api/v1/tasks/%d", s.srv.URL(), id), s.merchant, nil, "")
	var task quan.Task
	if a.status == http.StatusOK {
		if err := json.Unmarshal(a.body, &task); err != nil {
			s.t.Fatal(err)
		}
	}
	return a, task
}

// unavailableCount is quan_unavailable_total{backend} on the site's
// /metrics.
func (s *outageSite) unavailableCount(backend string) float64 {
	s.t.Helper()
	v, _ := value(scrape(s.t, s.srv.AdminURL()), "quan_unavailable_total", map[string]string{"backend": backend})
	return v
}

// waitStalled waits until task id is stalled on code and backend, and
// returns it.
func (s *outageSite) waitStalled(id int64, code, backend string) quan.Task {
	s.t.Helper()
	var task quan.Task
	until(s.t, 60*time.Second, func() string {
		var a answer
		a, task = s.task(id)
		if a.status != http.StatusOK || task.Stalled == nil || task.Stalled.Code != code || task.Stalled.Backend != backend {
			return fmt.Sprintf("task %d: %d, %s, stalled %+v; want stalled %s of the %s", id, a.status, task.Status, task.Stalled, code, backend)
		}
		return ""
	})
	return task
}

// waitSucceeded waits until task id succeeded, with no stall left.
func (s *outageSite) waitSucceeded(id int64) quan.Task {
	s.t.Helper()
	var task quan.Task
	until(s.t, 60*time.Second, func() string {
		var a answer
		a, task = s.task(id)
		if a.status != http.StatusOK || task.Status != quan.TaskSucceeded || task.Stalled != nil {
			return fmt.Sprintf("task %d: %d, %s, stalled %+v; want succeeded, not stalled", id, a.status, task.Status, task.Stalled)
		}
		return ""
	})
	return task
}

// TestCacheOutage: while the Redis that serve's claims reserve in is down
// (the test's own, stopped), claims answer 503 unavailable naming the
// cache with Retry-After, never 500; the access log and
// quan_unavailable_total{backend="cache"} name the cache; reads the store
// serves alone still answer; a distribution is taken and shows it is
// stalled on the cache. Once Redis is back, claims succeed again and the
// distribution finishes, its stall gone.
func TestCacheOutage(t *testing.T) {
	redis := fault.StartRedis(t)
	env := testEnv(t)
	env["QUAN_CACHE"] = redis.URL()
	s := startOutageSite(t, env)
	if a := s.claim(1); a.status != http.StatusAccepted {
		t.Fatalf("claim with Redis up: %d %s", a.status, a.body)
	}

	redis.Stop()
	for user := int64(2); user <= 4; user++ {
		wantUnavailable(t, fmt.Sprintf("claim of user %d", user), s.claim(user), "cache")
	}
	if a := call(t, s.client, "GET", fmt.Sprintf("%s/api/v1/templates/%d", s.srv.URL(), s.tpl.ID), s.merchant, nil, ""); a.status != http.StatusOK {
		t.Errorf("a template, which the store serves alone: %d %s", a.status, a.body)
	}
	a := s.upload(10, 11, 12)
	if a.status != http.StatusCreated {
		t.Fatalf("upload with Redis down: %d %s", a.status, a.body)
	}
	var task quan.Task
	json.Unmarshal(a.body, &task)
	stalled := s.waitStalled(task.ID, quan.EUNAVAILABLE, quan.BackendCache)
	if stalled.Status != quan.TaskRunning || stalled.Stalled.Since.IsZero() || !strings.Contains(stalled.Stalled.Reason, "cache") {
		t.Errorf("stalled task: %s %+v", stalled.Status, stalled.Stalled)
	}
	if n := s.unavailableCount(quan.BackendCache); n < 3 {
		t.Errorf("quan_unavailable_total{backend=cache} %v, want at least the 3 claims", n)
	}
	if logs := s.logs.String(); !regexp.MustCompile(`msg=request .*route="POST /api/v1/templates/\{id\}/claim" status=503 .*backend=cache`).MatchString(logs) {
		t.Errorf("no access log line of a claim answered 503 naming the cache:\n%s", logs)
	}

	redis.Start()
	until(t, 30*time.Second, func() string {
		if a := s.claim(2); a.status != http.StatusAccepted {
			return fmt.Sprintf("claim with Redis back: %d %s", a.status, a.body)
		}
		return ""
	})
	if done := s.waitSucceeded(task.ID); done.Counts.Issued != 3 {
		t.Errorf("the distribution issued %d of 3", done.Counts.Issued)
	}
}

// TestStoreOutage: while the MariaDB serve runs on is down (a mariadbd
// of the test binary's own, stopped), every route tried that needs it,
// a claim's answer, lists, settlement, tasks and their upload, and the
// console's pages, answers 503 unavailable naming the store with
// Retry-After, never 500, and /readyz says the store is not ready. A new
// claim needs no store: it is accepted, the bus holding it. Once MariaDB
// is back, the routes answer again and that claim is issued.
func TestStoreOutage(t *testing.T) {
	db := fault.SharedMariaDB(t)
	env := testEnv(t)
	env["QUAN_STORE"] = db.Database(t)
	s := startOutageSite(t, env)
	ctx := t.Context()
	if _, err := s.srv.App().Accounts.Add(ctx, quan.Identity{Role: quan.RoleAdmin, Subject: "test"},
		accounts.NewAccount{Name: "ops", Role: quan.RoleMerchant, ShopNo: 1, Password: "password-ops"}); err != nil {
		t.Fatal(err)
	}
	console := signIn(t, s.srv.URL(), "ops", "password-ops")
	a := s.claim(1)
	if a.status != http.StatusAccepted {
		t.Fatalf("claim with the store up: %d %s", a.status, a.body)
	}
	var first quan.Claim
	json.Unmarshal(a.body, &first)
	a = s.upload(20, 21)
	if a.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	var task quan.Task
	json.Unmarshal(a.body, &task)
	s.waitSucceeded(task.ID)

	db.Stop()
	base, user := s.srv.URL(), s.user(1)
	quote, _ := json.Marshal(map[string]any{"items": []map[string]any{{"sku": "shoe", "category": "wear", "shopNo": 1, "unitPrice": 20_000, "quantity": 1}}})
	for _, r := range []struct {
		method, path, token string
		body                []byte
	}{
		{"GET", "/api/v1/templates", s.merchant, nil},
		{"GET", fmt.Sprintf("/api/v1/templates/%d", s.tpl.ID), s.merchant, nil},
		{"GET", "/api/v1/tasks", s.merchant, nil},
		{"GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), s.merchant, nil},
		{"GET", "/api/v1/me/coupons", user, nil},
		{"POST", "/api/v1/settlement/quote", user, quote},
		{"GET", "/api/v1/stats", s.merchant, nil},
	} {
		ct := ""
		if r.body != nil {
			ct = "application/json"
		}
		wantUnavailable(t, r.method+" "+r.path, call(t, s.client, r.method, base+r.path, r.token, r.body, ct), "store")
	}
	wantUnavailable(t, "upload", s.upload(30), "store")
	wantUnavailable(t, "a claim's answer", call(t, s.client, "GET", base+"/api/v1/claims/"+first.ID, user, nil, ""), "store")
	// A claim needs no store: the claims' cache has the template, and the
	// bus keeps the claim until the store is back.
	during := s.claim(40)
	if during.status != http.StatusAccepted {
		t.Errorf("claim with the store down: %d %s, want 202", during.status, during.body)
	}
	for _, page := range []string{"/console/templates", fmt.Sprintf("/console/tasks/%d", task.ID)} {
		res, err := console.Get(base + page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "the store is unavailable") {
			t.Errorf("console %s: %d, Retry-After %q, want a 503 page saying the store is down:\n%s", page, res.StatusCode, res.Header.Get("Retry-After"), body)
		}
	}
	if code, checks := readyChecks(t, s.srv); code != http.StatusServiceUnavailable || checks["store"] != "unavailable" {
		t.Errorf("readyz with the store down: %d %v", code, checks)
	}
	if n := s.unavailableCount(quan.BackendStore); n < 11 {
		t.Errorf("quan_unavailable_total{backend=store} %v, want at least 11", n)
	}

	db.Start(t)
	until(t, 30*time.Second, func() string {
		if a := call(t, s.client, "GET", base+"/api/v1/templates", s.merchant, nil, ""); a.status != http.StatusOK {
			return fmt.Sprintf("templates with the store back: %d %s", a.status, a.body)
		}
		return ""
	})
	var c quan.Claim
	json.Unmarshal(during.body, &c)
	until(t, 60*time.Second, func() string {
		a := call(t, s.client, "GET", base+"/api/v1/claims/"+c.ID, s.user(40), nil, "")
		json.Unmarshal(a.body, &c)
		if a.status != http.StatusOK || c.Status != quan.ClaimIssued {
			return fmt.Sprintf("the claim accepted while the store was down: %d %s", a.status, a.body)
		}
		return ""
	})
	if res, err := console.Get(base + "/console/templates"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("console with the store back: %v %v", res.Status, err)
	} else {
		res.Body.Close()
	}
}

// signIn signs in to the console at base and returns a client holding the
// session.
func signIn(t *testing.T, base, name, password string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: time.Minute}
	res, err := c.Get(base + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in page:\n%s", page)
	}
	res, err = c.PostForm(base+"/console/login", url.Values{"csrf": {string(m[1])}, "name": {name}, "password": {password}, "next": {"/console/templates"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/console/templates" {
		t.Fatalf("sign in: %s at %s", res.Status, res.Request.URL)
	}
	return c
}

// TestBusOutage: while the NATS server serve hands claims and chunks to
// is down (the test's own, stopped), claims answer 503 unavailable naming
// the bus with Retry-After; a distribution is taken (the store holds it)
// and shows it is stalled on the bus. Once NATS is back, claims succeed
// and the distribution finishes, its stall gone. On MySQL and Redis:
// skipped without QUAN_TEST_MYSQL and QUAN_TEST_REDIS.
func TestBusOutage(t *testing.T) {
	env, ns := productionEnv(t)
	s := startOutageSite(t, env)
	if a := s.claim(1); a.status != http.StatusAccepted {
		t.Fatalf("claim with NATS up: %d %s", a.status, a.body)
	}

	ns.stop()
	a := s.upload(50, 51, 52)
	if a.status != http.StatusCreated {
		t.Fatalf("upload with NATS down: %d %s", a.status, a.body)
	}
	var task quan.Task
	json.Unmarshal(a.body, &task)
	wantUnavailable(t, "claim", s.claim(2), "bus")
	s.waitStalled(task.ID, quan.EUNAVAILABLE, quan.BackendBus)
	if n := s.unavailableCount(quan.BackendBus); n < 1 {
		t.Errorf("quan_unavailable_total{backend=bus} %v, want the claim", n)
	}

	ns.start()
	until(t, 30*time.Second, func() string {
		if a := s.claim(3); a.status != http.StatusAccepted {
			return fmt.Sprintf("claim with NATS back: %d %s", a.status, a.body)
		}
		return ""
	})
	if done := s.waitSucceeded(task.ID); done.Counts.Issued != 3 {
		t.Errorf("the distribution issued %d of 3", done.Counts.Issued)
	}
}
