package main

// The operator console driven in a real browser (Debian's chromium through
// chromedp), as a person uses it: typing into fields, clicking buttons,
// waiting for what they would see. quan serve runs in-process on a fresh
// data folder. The tests skip without QUAN_TEST_BROWSER, which names the
// browser, and fail when it is set and the browser does not start (.ci/run
// sets it). On failure a test saves a screenshot of its page, under
// QUAN_TEST_ARTIFACTS if set, and logs its path.

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/templates"
)

const (
	// browserEnv names the browser binary the console's browser tests drive.
	browserEnv = integration.Browser
	// artifactsEnv names a folder for the screenshots of failed tests; the
	// system's temporary folder without it.
	artifactsEnv = "QUAN_TEST_ARTIFACTS"
	// screenshotEnv names the PNG TestConsoleScreenshot writes.
	screenshotEnv = "QUAN_SCREENSHOT"
	// browserZone is the browser's time zone: the console's default, so
	// that the page does not reload to tell the server another one.
	browserZone = "Asia/Shanghai"
	// stepTimeout bounds one step of a test (a page to load, an element
	// to appear); polls for a distribution's end get longer.
	stepTimeout = 30 * time.Second
)

// consoleSite is quan serve with its console, for a browser test.
type consoleSite struct {
	URL string // the server's base URL, without a trailing slash
	App *app.App
}

// startConsole runs quan serve in-process on a fresh data folder and
// port; its console is at /console.
func startConsole(t *testing.T) *consoleSite {
	t.Helper()
	srv := startServe(t, testEnv(t))
	return &consoleSite{URL: srv.URL(), App: srv.App()}
}

// admin is the identity the tests create accounts with, as `quan user
// add` does.
var admin = quan.Identity{Subject: "browser-test", Role: quan.RoleAdmin}

// addMerchant creates the console account name of shop's merchant and
// returns its password.
func (s *consoleSite) addMerchant(t *testing.T, name string, shop int64) string {
	t.Helper()
	password := "pw-" + name + "-correct-horse"
	if _, err := s.App.Accounts.Add(t.Context(), admin, accounts.NewAccount{Name: name, Role: quan.RoleMerchant, ShopNo: shop, Password: password}); err != nil {
		t.Fatalf("add account %s: %v", name, err)
	}
	return password
}

// addTemplate creates a template of shop through the service, active if
// asked.
func (s *consoleSite) addTemplate(t *testing.T, shop int64, name string, kind quan.Kind, rule quan.Rule, stock int64, active bool) *quan.Template {
	t.Helper()
	who := quan.Identity{Subject: "browser-test", Role: quan.RoleMerchant, ShopNo: shop}
	now := time.Now().Truncate(time.Hour)
	tpl, err := s.App.Templates.Create(t.Context(), who, templates.NewTemplate{
		TemplateSpec: quan.TemplateSpec{
			Name: name, Kind: kind, Rule: rule, Source: quan.SourceShop, Scope: quan.Scope{Kind: quan.ScopeAll},
			IssueStart: now.Add(-time.Hour), IssueEnd: now.AddDate(0, 0, 30),
			Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 168}, PerUserLimit: 1,
		},
		Stock: stock,
	})
	if err != nil {
		t.Fatalf("create template %q: %v", name, err)
	}
	if active {
		if tpl, err = s.App.Templates.Activate(t.Context(), who, tpl.ID); err != nil {
			t.Fatalf("activate template %q: %v", name, err)
		}
	}
	return tpl
}

// browser is a tab of the browser under test.
type browser struct {
	t    *testing.T
	ctx  context.Context // the tab's; each step derives its deadline from it
	base string          // the console's server, set once it runs

	mu      sync.Mutex
	console []string // what the page wrote to its console, logged on failure
}

// newBrowser starts the browser QUAN_TEST_BROWSER names (headless, no
// sandbox as tests run as root) with a w×h window, and opens a tab. It
// skips t without the variable and fails t when the browser does not
// start. The browser stops when t ends.
func newBrowser(t *testing.T, w, h int) *browser {
	t.Helper()
	bin := integration.Need(t, browserEnv)[0] // a Chromium binary: QUAN_TEST_BROWSER=$(command -v chromium)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.WindowSize(w, h),
		chromedp.Env("TZ="+browserZone),
	)
	allocCtx, stop := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(stop)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// The first run starts the browser, with no deadline: a deadline on
	// it would end the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("%s=%s: the browser does not start: %v", browserEnv, bin, err)
	}
	return openTab(t, ctx, "", w, h)
}

// fresh opens a tab in a new browser context of b's browser: a stranger's
// browser, with none of b's cookies. It closes when b's test ends.
func (b *browser) fresh(w, h int) *browser {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open a tab in a new browser context: %v", err)
	}
	return openTab(b.t, ctx, b.base, w, h)
}

// openTab readies the tab of ctx: a w×h viewport, dialogs (a confirm
// before a change) answered yes as a person would, the page's console
// kept, and a screenshot if the test fails.
func openTab(t *testing.T, ctx context.Context, base string, w, h int) *browser {
	t.Helper()
	b := &browser{t: t, ctx: ctx, base: base}
	b.do("set the viewport", chromedp.EmulateViewport(int64(w), int64(h)))
	go func() {
		for ev, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			b.logConsole("dialog: " + ev.Message)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			b.logConsole(string(m.Type) + ": " + m.Text)
		}
	}()
	// Cleanups run last first: this one before the tab closes.
	t.Cleanup(b.screenshotOnFailure)
	return b
}

func (b *browser) logConsole(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.console = append(b.console, line)
}

// screenshotOnFailure saves the page as a PNG if the test failed, and
// logs where, with the page's address and console.
func (b *browser) screenshotOnFailure() {
	if !b.t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	b.mu.Lock()
	b.t.Logf("the page at %s; its console:\n\t%s", loc, strings.Join(b.console, "\n\t"))
	b.mu.Unlock()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("no screenshot: %v", err)
		return
	}
	// Not t.TempDir: it is removed when the test ends, and the
	// screenshot is for after.
	dir := os.Getenv(artifactsEnv)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.t.Logf("no screenshot: %v", err)
			return
		}
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(b.t.Name(), "_")
	f, err := os.CreateTemp(dir, name+"-*.png")
	if err != nil {
		b.t.Logf("no screenshot: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(shot); err != nil {
		b.t.Logf("no screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the failed test's page: %s", f.Name())
}

// do runs the steps of one thing a person does, what, within stepTimeout,
// and fails the test if they fail.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// get runs one action that returns a value, for what, within timeout.
func get[T any](b *browser, what string, timeout time.Duration, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// eval evaluates js in the page, awaiting a promise it returns.
func eval[T any](b *browser, what, js string) T {
	b.t.Helper()
	return get(b, what, stepTimeout, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// poll waits until js is truthy in the page, within timeout, and returns
// its value.
func poll[T any](b *browser, what, js string, timeout time.Duration) T {
	b.t.Helper()
	return get(b, what, timeout+5*time.Second, chromedp.Poll[T](js, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
}

// css selects the first element matching sel.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// retype replaces the text of the input sel with text, typed key by key.
func retype(sel, text string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	return chromedp.Steps(
		chromedp.WaitVisible(css(sel)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+string(q)+`).value = ""`),
		chromedp.SendKeys(css(sel), text),
	)
}

// choose picks value in the select sel and tells the page, as a person's
// pick does.
func choose(sel, value string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	return chromedp.Steps(
		chromedp.SetValue(css(sel), value),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+string(q)+`).dispatchEvent(new Event("change", {bubbles: true}))`),
	)
}

// waitFor evaluates js in the page until it gives a value that is not
// null, within timeout. An evaluation that fails, as when the page
// navigates, counts as not yet.
func waitFor[T any](b *browser, what, js string, timeout time.Duration) T {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[*T](js))
		cancel()
		switch {
		case err == nil && v != nil:
			return *v
		case err != nil:
			last = err
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: not within %v (last error: %v)", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchProgress runs in each new document: on the first document of a
// task's page (a reload is not) it notes in sessionStorage, under
// "quanTest:" and the path, the percent when the page loaded and, once
// #task-percent says 100, the progress bar's value and max.
const watchProgress = `(function () {
	var path = location.pathname;
	if (!/^\/console\/tasks\/[0-9]+$/.test(path)) return;
	var key = "quanTest:" + path;
	if (sessionStorage.getItem(key + ":loaded")) return;
	sessionStorage.setItem(key + ":loaded", "1");
	document.addEventListener("DOMContentLoaded", function () {
		var el = document.getElementById("task-percent"), bar = document.getElementById("task-progress");
		if (!el || !bar) return;
		var initial = el.textContent.trim();
		var seen = function () {
			if (parseFloat(el.textContent) >= 100 && !sessionStorage.getItem(key)) {
				sessionStorage.setItem(key, JSON.stringify({initial: initial, percent: el.textContent.trim(), value: bar.value, max: bar.max}));
			}
		};
		new MutationObserver(seen).observe(el, {childList: true, characterData: true, subtree: true});
		seen();
	});
})()`

// location is the page's path and query.
func (b *browser) location() string {
	b.t.Helper()
	return eval[string](b, "read the location", `location.pathname + location.search`)
}

// signIn opens the console, lands on the sign-in form and signs in.
func (b *browser) signIn(name, password string) {
	b.t.Helper()
	b.do("sign in as "+name,
		chromedp.Navigate(b.base+"/console/templates"),
		chromedp.WaitVisible(css(`form[action="/console/login"] #password`)),
		chromedp.SendKeys(css(`form[action="/console/login"] #name`), name),
		chromedp.SendKeys(css(`form[action="/console/login"] #password`), password),
		chromedp.Click(css(`form[action="/console/login"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`a[href="/console/templates/new"]`)),
	)
	if loc := b.location(); loc != "/console/templates" {
		b.t.Fatalf("signed in at %s, want the template list", loc)
	}
}

// TestConsoleBrowserFlow runs a campaign end to end in the browser: sign
// in, create and activate a template, distribute to a 10,000-user file
// with a dry run first, watch the progress reach 100% live, download the
// failure report, see the statistics chart; a request without the CSRF
// token is refused, another shop cannot reach the template, and signing
// out ends the session.
func TestConsoleBrowserFlow(t *testing.T) {
	b := newBrowser(t, 1280, 800) // first: it skips without a browser
	site := startConsole(t)
	b.base = site.URL
	pw1001 := site.addMerchant(t, "shop1001", 1001)
	pw1002 := site.addMerchant(t, "shop1002", 1002)

	b.signIn("shop1001", pw1001)

	// A template through the form, its discount previewed on an example
	// order as the rule is typed.
	form := `#template-form `
	b.do("open the new template form",
		chromedp.Click(css(`a[href="/console/templates/new"]`)),
		chromedp.WaitVisible(css(`#template-form`)),
		choose(form+`[name="kind"]`, string(quan.KindThreshold)),
		chromedp.SendKeys(css(form+`[name="name"]`), "浏览器测试 满100减20"),
		chromedp.SendKeys(css(form+`[name="rule.threshold"]`), "100"),
		chromedp.SendKeys(css(form+`[name="rule.amount"]`), "20"),
		retype(form+`[name="stock"]`, "20000"),
		chromedp.SendKeys(css(form+`[name="promoCode"]`), "browser11"),
		retype(`#example`, "150"),
	)
	b.do("fill the display fields (logo, category, goods, instructions, metadata)",
		chromedp.SendKeys(css(form+`[name="logoUrl"]`), "https://cdn.example.com/logo.png"),
		chromedp.SendKeys(css(form+`[name="category"]`), "饮品"),
		chromedp.SendKeys(css(form+`[name="goods"]`), "奶茶\n咖啡"),
		chromedp.SendKeys(css(form+`[name="instructions"]`), "到店出示券码"),
		chromedp.SendKeys(css(form+`[name="metadata"]`), "color=#ff3300"),
	)
	preview := poll[string](b, "the preview of 20 off 150", `(function () {
		var t = document.getElementById("preview-out").textContent;
		return t.indexOf("20.00") >= 0 && t.indexOf("130.00") >= 0 && t; })()`, 10*time.Second)
	b.do("change the example order to 80", retype(`#example`, "80"))
	// Below the threshold: no discount, said without a number.
	below := poll[string](b, "the preview of an order below the threshold", `(function () {
		var o = document.getElementById("preview-out"), t = o.textContent;
		return t !== "" && !/[0-9]/.test(t) && !o.classList.contains("field-error") && t; })()`, 10*time.Second)
	t.Logf("preview: %q, then %q", preview, below)
	b.do("create the template",
		chromedp.Click(css(form+`button[type="submit"]`)),
		chromedp.WaitVisible(css(`#tpl-status.status-draft`)),
	)
	m := regexp.MustCompile(`^/console/templates/(\d+)`).FindStringSubmatch(b.location())
	if m == nil {
		t.Fatalf("after creating: at %s, want the template's page", b.location())
	}
	tplID, _ := strconv.ParseInt(m[1], 10, 64)
	tplPage := fmt.Sprintf("/console/templates/%d", tplID)
	// The promo code (口令券) typed in lower case is kept upper-case.
	if code := eval[string](b, "read the promo code", `document.getElementById("tpl-promo").textContent`); code != "BROWSER11" {
		t.Fatalf("the template's page shows the promo code %q, want BROWSER11", code)
	}
	saved, err := site.App.Templates.Get(t.Context(), quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001, Subject: "browser-test"}, tplID)
	if err != nil {
		t.Fatal(err)
	}
	if saved.LogoURL != "https://cdn.example.com/logo.png" || saved.Category != "饮品" || !slices.Equal(saved.Goods, []string{"奶茶", "咖啡"}) ||
		saved.Instructions != "到店出示券码" || saved.Metadata["color"] != "#ff3300" {
		t.Errorf("the form saved the display %q %q %q %q %v", saved.LogoURL, saved.Category, saved.Goods, saved.Instructions, saved.Metadata)
	}
	b.do("activate the template",
		chromedp.Click(css(`form[action="`+tplPage+`/activate"] button`)),
		chromedp.WaitVisible(css(`#tpl-status.status-active`)),
	)

	// A 10,000-user file with 20 bad rows, first as a dry run.
	file, bad := writeUserFile(t, 10_000)
	b.do("open the upload form (form#task-form) from the template's page",
		chromedp.Click(css(fmt.Sprintf(`a[href="/console/tasks/new?template=%d"]`, tplID))),
		chromedp.WaitVisible(css(`form#task-form`)),
	)
	b.do("fill the upload form (template, name, file)",
		choose(`#task-form [name="templateId"]`, strconv.FormatInt(tplID, 10)),
		chromedp.SendKeys(css(`#task-form [name="name"]`), "浏览器测试 一万人"),
		chromedp.SetUploadFiles(css(`#task-form input[name="file"]`), []string{file}),
	)
	if !eval[bool](b, "read the dry run box", `document.querySelector('#task-form [name="dryRun"]').checked`) {
		b.do("check dry run", chromedp.Click(css(`#task-form [name="dryRun"]`)))
	}
	// The dry run's page offers the real run once the dry run is done,
	// with its counts by cause.
	b.do("submit the dry run",
		chromedp.Click(css(`#task-form button[type="submit"]`)),
		chromedp.WaitVisible(css(`form#real-form button[type="submit"]`)),
	)
	m = regexp.MustCompile(`^/console/tasks/(\d+)`).FindStringSubmatch(b.location())
	if m == nil {
		t.Fatalf("the dry run at %s, want /console/tasks/{id}", b.location())
	}
	dryID := m[1]
	counts := eval[map[string]string](b, "read the dry run's counts", `({
		valid: document.querySelector('[data-field="counts.valid"]').textContent.trim(),
		invalid_id: document.getElementById("cause-invalid_id").textContent.trim(),
		duplicate_in_file: document.getElementById("cause-duplicate_in_file").textContent.trim(),
		out_of_stock: document.getElementById("cause-out_of_stock").textContent.trim()})`)
	if want := map[string]string{"valid": "9980", "invalid_id": "10", "duplicate_in_file": "10", "out_of_stock": "0"}; !maps.Equal(counts, want) {
		t.Fatalf("the dry run shows %v, want %v", counts, want)
	}

	// For real: the progress reaches 100% on the task's page as it was
	// first loaded. A script run in every new document watches the
	// percent of the first document of each task page (never of a
	// reload) and notes in sessionStorage when it reaches 100%, so what
	// it notes was seen without reloading, whatever the page does after.
	b.do("watch the task pages' progress", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchProgress})
		return err
	}))
	b.do("distribute for real", chromedp.Click(css(`form#real-form button[type="submit"]`)))
	type progress struct {
		ID      string  `json:"id"`
		Initial string  `json:"initial"` // the percent when the page loaded
		Percent string  `json:"percent"` // when it reached 100
		Value   float64 `json:"value"`   // the progress bar's then
		Max     float64 `json:"max"`
	}
	done := waitFor[progress](b, "the real task's progress at 100% without a reload", `(function () {
		var m = location.pathname.match(/^\/console\/tasks\/(\d+)$/);
		if (!m || m[1] === "`+dryID+`") return null;
		var seen = sessionStorage.getItem("quanTest:" + location.pathname);
		if (!seen) return null;
		seen = JSON.parse(seen); seen.id = m[1];
		return seen; })()`, 2*time.Minute)
	t.Logf("the real task's progress: %+v", done)
	if done.Value < done.Max {
		t.Fatalf("the percent says %s but the progress bar is at %v of %v", done.Percent, done.Value, done.Max)
	}
	taskID := done.ID
	b.do("see the task succeeded", chromedp.WaitVisible(css(`#task-live [data-status].status-succeeded`)))

	// The failure report: the bad rows with their causes.
	b.do("find the failure report's link", chromedp.WaitVisible(css(`a[href="/console/tasks/`+taskID+`/failures.csv"]`)))
	report := eval[map[string]any](b, "download the failure report", `fetch(document.querySelector('a[href="/console/tasks/`+taskID+`/failures.csv"]').href, {credentials: "same-origin"})
		.then(function (r) { return r.text().then(function (t) { return {status: r.status, type: r.headers.get("Content-Type"), body: t}; }); })`)
	if report["status"] != float64(200) || !strings.HasPrefix(fmt.Sprint(report["type"]), "text/csv") {
		t.Fatalf("failures.csv: %v %v\n%.500s", report["status"], report["type"], report["body"])
	}
	checkFailureReport(t, report["body"].(string), bad)

	// The statistics: a chart drawn on a canvas.
	b.do("open the statistics",
		chromedp.Navigate(b.base+tplPage),
		chromedp.Click(css(`a[href="`+tplPage+`/stats"]`)),
		chromedp.WaitVisible(css(`#stats-chart[data-drawn="true"]`)),
	)
	if !eval[bool](b, "look for the chart's canvas", `!!document.querySelector('#stats-chart canvas')`) {
		t.Fatal("the statistics chart is drawn without a canvas")
	}

	// A state change without the session's CSRF token is refused; with it
	// (the control) it goes through.
	b.do("open the template", chromedp.Navigate(b.base+tplPage), chromedp.WaitVisible(css(`#tpl-status`)))
	status := eval[int](b, "pause without the CSRF token", `fetch("`+tplPage+`/pause", {method: "POST", credentials: "same-origin"}).then(function (r) { return r.status; })`)
	if status != 403 {
		t.Fatalf("pause without the CSRF token: %d, want 403", status)
	}
	b.do("see the template still active", chromedp.Navigate(b.base+tplPage), chromedp.WaitVisible(css(`#tpl-status.status-active`)))
	status = eval[int](b, "pause with the CSRF token", `fetch("`+tplPage+`/pause", {method: "POST", credentials: "same-origin",
		headers: {"X-CSRF-Token": document.body.getAttribute("data-csrf")}}).then(function (r) { return r.status; })`)
	if status != 200 {
		t.Fatalf("pause with the CSRF token: %d, want 200 (the template's page after the redirect)", status)
	}
	b.do("resume the template",
		chromedp.Navigate(b.base+tplPage),
		chromedp.WaitVisible(css(`#tpl-status.status-paused`)),
		chromedp.Click(css(`form[action="`+tplPage+`/resume"] button`)),
		chromedp.WaitVisible(css(`#tpl-status.status-active`)),
	)

	// Another shop's merchant, in a browser of their own, gets the 404
	// page at the template's address.
	other := b.fresh(1280, 800)
	other.signIn("shop1002", pw1002)
	res := get(other, "open another shop's template", stepTimeout, chromedp.NavigateResponse(other.base+tplPage))
	if res.Status != 404 {
		t.Fatalf("another shop's template: %d, want 404", res.Status)
	}
	msg := get(other, "read the error page", stepTimeout, chromedp.Text(css(`main .error`)))
	if !strings.HasPrefix(msg, "404") || strings.Contains(eval[string](other, "read the page", `document.body.innerText`), "浏览器测试") {
		t.Fatalf("another shop's template: the page says %q", msg)
	}

	// Signing out ends the session: the console's pages lead to the
	// sign-in form again.
	b.do("sign out",
		chromedp.Click(css(`form[action="/console/logout"] button`)),
		chromedp.WaitVisible(css(`form[action="/console/login"] #password`)),
	)
	b.do("go back to the templates",
		chromedp.Navigate(b.base+"/console/templates"),
		chromedp.WaitVisible(css(`form[action="/console/login"] #password`)),
	)
	if loc := b.location(); !strings.HasPrefix(loc, "/console/login") {
		t.Fatalf("after signing out, the templates at %s, want the sign-in form", loc)
	}
}

// badRow is a row of a distribution file that gets no coupon.
type badRow struct {
	Line   int64
	UserID string
	Cause  quan.Cause
}

// writeUserFile writes a CSV of n user rows, 10 of them invalid ids and 10
// repeats of an earlier user, and returns its path and the bad rows.
func writeUserFile(t *testing.T, n int) (string, []badRow) {
	t.Helper()
	invalid := []string{"abc", "0", "1.5", "12x", "user7", "x1", "9a9", "00", "one", "7 7"}
	var buf bytes.Buffer
	var bad []badRow
	buf.WriteString("userId\n")
	next := int64(5_000_000)
	for i := range n {
		line := int64(i) + 2 // the header is line 1
		var id string
		switch {
		case i%500 == 100 && len(bad) < 20 && len(bad)%2 == 0:
			id = invalid[len(bad)/2]
			bad = append(bad, badRow{line, id, quan.CauseInvalidID})
		case i%500 == 350 && len(bad) < 20 && len(bad)%2 == 1:
			id = strconv.FormatInt(next-7, 10) // a user a few rows up
			bad = append(bad, badRow{line, id, quan.CauseDuplicate})
		default:
			next++
			id = strconv.FormatInt(next, 10)
		}
		buf.WriteString(id + "\n")
	}
	if len(bad) != 20 {
		t.Fatalf("the file has %d bad rows, want 20", len(bad))
	}
	path := filepath.Join(t.TempDir(), "users-10000.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, bad
}

// checkFailureReport checks that the CSV report body lists exactly the
// bad rows, with their causes.
func checkFailureReport(t *testing.T, body string, bad []badRow) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("failures.csv: %v\n%.500s", err, body)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], quan.FailureColumns()) {
		t.Fatalf("failures.csv header %q, want %q", recs[:min(1, len(recs))], quan.FailureColumns())
	}
	var got []badRow
	for _, r := range recs[1:] {
		line, err := strconv.ParseInt(r[0], 10, 64)
		if err != nil || len(r) != len(recs[0]) {
			t.Fatalf("failures.csv row %q", r)
		}
		got = append(got, badRow{line, r[1], quan.Cause(r[3])})
	}
	if !slices.Equal(got, bad) {
		t.Fatalf("failures.csv rows:\n%v\nwant:\n%v", got, bad)
	}
}

// TestConsoleBrowserPhone checks the template list and the template form
// on a phone's 390 px wide screen: nothing wider than the screen, and a
// label on every input.
func TestConsoleBrowserPhone(t *testing.T) {
	b := newBrowser(t, 390, 844) // first: it skips without a browser
	site := startConsole(t)
	b.base = site.URL
	b.do("emulate a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile, chromedp.EmulateTouch))
	pw := site.addMerchant(t, "phone1001", 1001)
	site.addTemplate(t, 1001, "双十一 全场满300减50 限时特惠 会员专享 每人限领一张", quan.KindThreshold, quan.Rule{Amount: 5000, Threshold: 30000}, 100_000, true)
	site.addTemplate(t, 1001, "新客立减10元", quan.KindDirect, quan.Rule{Amount: 1000}, 5_000, false)
	site.addTemplate(t, 1001, "9折最高减100_a_long_name_without_spaces_AAAAAAAAAAAAAAAAAAAAAAAA", quan.KindDiscount, quan.Rule{Rate: 90, Cap: 10000}, 2_000, true)

	b.signIn("phone1001", pw)
	checkPhonePage(b, "the template list")
	b.do("open the new template form",
		chromedp.Click(css(`a[href="/console/templates/new"]`)),
		chromedp.WaitVisible(css(`#template-form`)),
	)
	checkPhonePage(b, "the template form")
	// Every kind's inputs, shown in turn, fit too.
	for _, kind := range []quan.Kind{quan.KindDiscount, quan.KindStep, quan.KindDirect} {
		b.do("choose "+string(kind), choose(`#template-form [name="kind"]`, string(kind)))
		checkPhonePage(b, "the template form for "+string(kind))
	}
}

// checkPhonePage fails the test if the page is wider than the phone's 390
// px or has a form control without a label.
func checkPhonePage(b *browser, what string) {
	b.t.Helper()
	width := eval[int](b, "measure "+what, `document.documentElement.scrollWidth`)
	if width > 390 {
		wide := eval[[]string](b, "find what is too wide", `Array.from(document.querySelectorAll("body *"))
			.filter(function (el) { var r = el.getBoundingClientRect(); return r.right > 391 && !el.closest(".scroll"); })
			.slice(0, 10).map(function (el) { return el.tagName + (el.id ? "#" + el.id : "") + "." + el.className + " right=" + Math.round(el.getBoundingClientRect().right); })`)
		b.t.Errorf("%s is %d px wide on a 390 px screen; too wide: %q", what, width, wide)
	}
	unlabelled := eval[[]string](b, "look for inputs without a label on "+what, `Array.from(document.querySelectorAll("input, select, textarea"))
		.filter(function (el) { return el.type !== "hidden" && el.labels.length === 0 && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby"); })
		.map(function (el) { return el.tagName + " name=" + el.name + " id=" + el.id; })`)
	if len(unlabelled) > 0 {
		b.t.Errorf("%s: inputs without a label: %q", what, unlabelled)
	}
}

// TestConsoleScreenshot writes the README's picture of the console, the
// template list with a few templates at 1280×800, to the PNG file
// QUAN_SCREENSHOT names:
//
//	QUAN_TEST_BROWSER=$(command -v chromium) QUAN_SCREENSHOT=docs/console.png go test ./cmd/quan -run TestConsoleScreenshot
func TestConsoleScreenshot(t *testing.T) {
	out := os.Getenv(screenshotEnv)
	if out == "" {
		t.Skipf("set %s to the PNG file to write (and %s to a Chromium binary) to take the README's screenshot of the console", screenshotEnv, browserEnv)
	}
	b := newBrowser(t, 1280, 800) // first: it skips without a browser
	// Without a Chinese font the page shows boxes for its words.
	if fonts, err := exec.Command("fc-list", ":lang=zh", "family").Output(); err != nil || len(bytes.TrimSpace(fonts)) == 0 {
		t.Fatalf("no Chinese font (fc-list :lang=zh: %v): install one, e.g. apt-get install fonts-wqy-microhei", err)
	}
	site := startConsole(t)
	b.base = site.URL
	pw := site.addMerchant(t, "operator", 1001)
	site.addTemplate(t, 1001, "双十一 满300减50", quan.KindThreshold, quan.Rule{Amount: 5000, Threshold: 30000}, 100_000, true)
	site.addTemplate(t, 1001, "新客立减10元", quan.KindDirect, quan.Rule{Amount: 1000}, 20_000, true)
	site.addTemplate(t, 1001, "会员日 9折 最高减100", quan.KindDiscount, quan.Rule{Rate: 90, Cap: 10000}, 5_000, false)
	site.addTemplate(t, 1001, "每满100减10 封顶50", quan.KindStep, quan.Rule{Amount: 1000, Step: 10000, Cap: 5000}, 50_000, true)
	site.addTemplate(t, 1001, "周末 满99减15", quan.KindThreshold, quan.Rule{Amount: 1500, Threshold: 9900}, 8_000, false)
	b.signIn("operator", pw)
	shot := get(b, "take the screenshot", stepTimeout, chromedp.CaptureScreenshot())
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if sz := img.Bounds().Size(); sz.X != 1280 || sz.Y != 800 {
		t.Fatalf("the screenshot is %v, want 1280×800", sz)
	}
	if len(shot) > 150<<10 {
		t.Fatalf("the screenshot has %d KB, want at most 150 KB for the README", len(shot)>>10)
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d KB, 1280×800)", out, len(shot)>>10)
}
