package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/http/console"
	"github.com/quanhq/quan/rules"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/templates"
)

// testNow is the console's clock in these tests.
var testNow = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

type testConsole struct {
	*httptest.Server
	store    *sqlite.Store
	db       *sqlite.DB // the store's, which a test may close to take it down
	accounts *accounts.Service
	tpls     *templates.Service

	mu  sync.Mutex
	now time.Time
}

func (tc *testConsole) clock() time.Time {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.now
}

func (tc *testConsole) advance(d time.Duration) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.now = tc.now.Add(d)
}

// newConsole serves the console, mounted in the API server as quan serve
// mounts it, over a fresh SQLite store, with an admin "root" and a
// merchant "m1001" of shop 1001 and "m1002" of shop 1002, whose
// passwords are "password-" and the name.
//
// Each setup, if any, may give the console more services (on tc.store,
// with tc.clock) before it serves; it may register cleanups with t.
func newConsole(t *testing.T, setup ...func(t *testing.T, tc *testConsole, c *console.Console)) *testConsole {
	t.Helper()
	return startConsole(t, func(tc *testConsole, c *console.Console) {
		for _, f := range setup {
			f(t, tc, c)
		}
	})
}

// startConsole is newConsole for benchmarks too.
func startConsole(t testing.TB, setup func(tc *testConsole, c *console.Console)) *testConsole {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := sqlite.NewStore(db)
	tc := &testConsole{store: store, db: db, now: testNow}
	tc.accounts = &accounts.Service{Store: store, Now: tc.clock, HashCost: 4}
	engine, err := rules.New(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tc.tpls = &templates.Service{Store: store, Now: tc.clock, Rules: engine, Versions: store}
	c := &console.Console{Accounts: tc.accounts, Templates: tc.tpls, Now: tc.clock}
	setup(tc, c)
	h, err := c.Handler()
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := qhttp.NewTokens([]byte("0123456789abcdef0123456789abcdef-test"), tc.clock)
	if err != nil {
		t.Fatal(err)
	}
	api := &qhttp.Server{Templates: tc.tpls, Tokens: tokens, Console: h, Now: tc.clock}
	tc.Server = httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		tc.Close()
		c.Close()
	})
	system := quan.Identity{Role: quan.RoleAdmin, Subject: "test"}
	for _, a := range []accounts.NewAccount{
		{Name: "root", Role: quan.RoleAdmin},
		{Name: "m1001", Role: quan.RoleMerchant, ShopNo: 1001},
		{Name: "m1002", Role: quan.RoleMerchant, ShopNo: 1002},
	} {
		a.Password = "password-" + a.Name
		if _, err := tc.accounts.Add(ctx, system, a); err != nil {
			t.Fatal(err)
		}
	}
	return tc
}

// browser is a client with its own cookies, as one browser is.
type browser struct {
	t    testing.TB
	tc   *testConsole
	http *http.Client
	csrf string // of the last page that had one
}

func (tc *testConsole) browser(t testing.TB) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, tc: tc, http: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get fetches path and returns the status, the final URL's path and the
// body; redirects are followed.
func (b *browser) get(path string) (int, string, string) {
	b.t.Helper()
	resp, err := b.http.Get(b.tc.URL + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.read(resp)
}

func (b *browser) read(resp *http.Response) (int, string, string) {
	b.t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	if m := csrfInput.FindSubmatch(body); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, resp.Request.URL.RequestURI(), string(body)
}

// post submits a form; the session's CSRF token is added unless form has
// one.
func (b *browser) post(path string, form url.Values) (int, string, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	resp, err := b.http.PostForm(b.tc.URL+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.read(resp)
}

func (b *browser) login(name, password string) (int, string, string) {
	b.t.Helper()
	b.get("/console/login")
	return b.post("/console/login", url.Values{"name": {name}, "password": {password}, "next": {"/console/templates"}})
}

func (tc *testConsole) signedIn(t testing.TB, name string) *browser {
	t.Helper()
	b := tc.browser(t)
	if status, path, body := b.login(name, "password-"+name); status != http.StatusOK || path != "/console/templates" {
		t.Fatalf("sign in as %s: %d at %s:\n%s", name, status, path, body)
	}
	return b
}

func contains(t *testing.T, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q:\n%s", w, body)
		}
	}
}

func TestSignInAndOut(t *testing.T) {
	tc := newConsole(t)
	b := tc.browser(t)

	status, path, _ := b.get("/console/templates?status=active")
	if status != http.StatusOK || path != "/console/login?next=%2Fconsole%2Ftemplates%3Fstatus%3Dactive" {
		t.Fatalf("signed out: %d at %s, want the sign-in form", status, path)
	}
	status, path, body := b.post("/console/login", url.Values{"name": {"m1001"}, "password": {"wrong-password"}})
	if status != http.StatusUnauthorized || !strings.Contains(body, "账号或密码错误") {
		t.Fatalf("wrong password: %d at %s:\n%s", status, path, body)
	}
	status, path, body = b.post("/console/login", url.Values{"name": {"m1001"}, "password": {"password-m1001"}, "next": {"/console/templates?status=active"}})
	if status != http.StatusOK || path != "/console/templates?status=active" {
		t.Fatalf("sign in: %d at %s:\n%s", status, path, body)
	}
	contains(t, body, "m1001", "店铺 1001", "退出登录")

	var session *http.Cookie
	u, _ := url.Parse(tc.URL + "/console/")
	for _, c := range b.http.Jar.Cookies(u) {
		if c.Name == "quan_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}

	status, path, _ = b.post("/console/logout", nil)
	if status != http.StatusOK || !strings.HasPrefix(path, "/console/login") {
		t.Fatalf("sign out: %d at %s", status, path)
	}
	// The server forgot the session: the old cookie signs nobody in.
	stolen := tc.browser(t)
	stolen.http.Jar.SetCookies(u, []*http.Cookie{{Name: "quan_session", Value: session.Value, Path: "/console"}})
	if _, path, _ := stolen.get("/console/templates"); !strings.HasPrefix(path, "/console/login") {
		t.Fatalf("a revoked session still opens %s", path)
	}
}

func TestSessionCookieFlags(t *testing.T) {
	tc := newConsole(t)
	for _, tls := range []bool{false, true} {
		jar := tc.browser(t)
		jar.get("/console/login")
		form := url.Values{"name": {"m1001"}, "password": {"password-m1001"}, "csrf": {jar.csrf}}
		req, _ := http.NewRequest(http.MethodPost, tc.URL+"/console/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tls {
			req.Header.Set("X-Forwarded-Proto", "https")
		}
		u, _ := url.Parse(tc.URL + "/console/")
		for _, c := range jar.http.Jar.Cookies(u) {
			req.AddCookie(c)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var set string
		for _, v := range resp.Header.Values("Set-Cookie") {
			if strings.HasPrefix(v, "quan_session=") {
				set = v
			}
		}
		for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/console"} {
			if !strings.Contains(set, want) {
				t.Errorf("session cookie %q lacks %s", set, want)
			}
		}
		if strings.Contains(set, "Secure") != tls {
			t.Errorf("behind TLS %v, session cookie %q", tls, set)
		}
	}
}

func TestLoginLockout(t *testing.T) {
	tc := newConsole(t)
	b := tc.browser(t)
	for range 5 {
		if status, _, _ := b.login("m1001", "not-the-password"); status != http.StatusUnauthorized {
			t.Fatalf("wrong password: %d, want 401", status)
		}
	}
	status, _, body := b.login("m1001", "password-m1001")
	if status != http.StatusTooManyRequests || !strings.Contains(body, "已暂时锁定") {
		t.Fatalf("sixth try with the right password: %d\n%s", status, body)
	}
	tc.advance(16 * time.Minute)
	if status, path, _ := b.login("m1001", "password-m1001"); status != http.StatusOK || path != "/console/templates" {
		t.Fatalf("after the lockout: %d at %s", status, path)
	}
}

func TestCSRF(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	status, _, body := b.post("/console/templates/new", url.Values{"csrf": {""}})
	_ = body
	if status != http.StatusMethodNotAllowed && status != http.StatusForbidden {
		t.Fatalf("post without token: %d", status)
	}
	// A real state change without the token is refused and changes nothing.
	tpl := createDraft(t, tc, 1001, "csrf")
	status, _, body = b.post("/console/templates/"+itoa(tpl.ID)+"/activate", url.Values{"csrf": {"forged"}})
	if status != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Fatalf("activate with a forged token: %d\n%s", status, body)
	}
	status, _, _ = b.post("/console/templates/"+itoa(tpl.ID)+"/activate", url.Values{"csrf": {""}})
	if status != http.StatusForbidden {
		t.Fatalf("activate without a token: %d", status)
	}
	if got, _ := tc.tpls.Get(context.Background(), quan.Identity{Role: quan.RoleAdmin}, tpl.ID); got.Status != quan.TemplateDraft {
		t.Fatalf("refused requests changed the template to %s", got.Status)
	}
	// From another origin, even with the token.
	form := url.Values{"csrf": {b.csrf}}
	req, _ := http.NewRequest(http.MethodPost, tc.URL+"/console/templates/"+itoa(tpl.ID)+"/activate", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin post: %d", resp.StatusCode)
	}
	// With it, it works.
	status, _, body = b.post("/console/templates/"+itoa(tpl.ID)+"/activate", nil)
	if status != http.StatusOK || !strings.Contains(body, "进行中") {
		t.Fatalf("activate: %d\n%s", status, body)
	}
}
