package console_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/codes"
	"github.com/quanhq/quan/http/console"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/report"
	"github.com/quanhq/quan/stats"
	"github.com/quanhq/quan/wallet"
)

// statsEnv are the services the statistics, live and code pages use, on
// the console's SQLite store and clock.
type statsEnv struct {
	console  *console.Console
	stats    *stats.Service
	codes    *codes.Service
	wallet   *wallet.Service
	claims   *claims.Service // with withClaims only
	refusals *stats.RefusalCounter
}

// withStats gives the console stats.Service and codes.Service (with the
// .xlsx export) over tc.store.
func withStats(env *statsEnv) func(t *testing.T, tc *testConsole, c *console.Console) {
	return func(t *testing.T, tc *testConsole, c *console.Console) {
		env.console = c
		env.stats = &stats.Service{Store: tc.store, Now: tc.clock}
		env.codes = &codes.Service{Codes: tc.store, Templates: tc.store, Now: tc.clock, Chunk: 10}
		env.wallet = &wallet.Service{Coupons: tc.store, Templates: tc.store, Now: tc.clock}
		env.refusals = &stats.RefusalCounter{Store: tc.store}
		c.Stats, c.Codes, c.CodesExport = env.stats, env.codes, report.Codes{}
		t.Cleanup(env.codes.Wait)
	}
}

// withClaims adds flash-sale claims as quan serve takes them: an in-memory
// cache, an embedded NATS bus, the store persisting claims, refusals
// counted in the statistics.
func withClaims(env *statsEnv) func(t *testing.T, tc *testConsole, c *console.Console) {
	return func(t *testing.T, tc *testConsole, c *console.Console) {
		srv, err := nats.StartEmbedded(t.Context(), t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		bus, err := srv.Bus(t.Context(), nats.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bus.Close() })
		env.claims = &claims.Service{Templates: tc.store, Coupons: tc.store, Claims: tc.store, Cache: inmem.NewCache(),
			Bus: bus, Now: tc.clock, Refusals: env.refusals, MaxDeliver: 3, Backoff: []time.Duration{10 * time.Millisecond}}
		quantest.ServeClaims(t, env.claims)
	}
}

func activeDraft(t *testing.T, tc *testConsole, shop int64, name string) *quan.Template {
	t.Helper()
	tpl := createDraft(t, tc, shop, name)
	tpl, err := tc.tpls.Activate(t.Context(), quan.Identity{Role: quan.RoleMerchant, ShopNo: shop}, tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// snapshot is what the live stream sends.
type snapshot struct {
	Stock, TotalStock, Issued, Claimed, Refused int64
	Refusals                                    map[string]int64
	ClaimsPerSec                                float64
	Chart                                       struct {
		X      []int64
		Claims []float64
	}
}

// stream opens path as Server-Sent Events with b's cookies and sends each
// snapshot's data on the channel, which closes with the stream.
func (b *browser) stream(t *testing.T, ctx context.Context, path string) <-chan snapshot {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.tc.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	client := &http.Client{Jar: b.http.Jar} // no timeout: a stream lasts
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	ch := make(chan snapshot, 100)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "snapshot":
				var s snapshot
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
					t.Errorf("snapshot %s: %v", line, err)
				}
				ch <- s
			}
		}
	}()
	return ch
}

// next returns the first snapshot of ch for which ok holds.
func next(t *testing.T, ch <-chan snapshot, what string, ok func(snapshot) bool) snapshot {
	t.Helper()
	timeout := time.After(20 * time.Second)
	var last snapshot
	for {
		select {
		case s, open := <-ch:
			if !open {
				t.Fatalf("stream ended waiting for %s; last %+v", what, last)
			}
			if ok(s) {
				return s
			}
			last = s
		case <-timeout:
			t.Fatalf("no snapshot with %s; last %+v", what, last)
		}
	}
}

func TestLiveTemplate(t *testing.T) {
	var env statsEnv
	tc := newConsole(t, withStats(&env), withClaims(&env))
	tpl := activeDraft(t, tc, 1001, "flash")
	theirs := createDraft(t, tc, 1002, "theirs")
	path := "/console/templates/" + itoa(tpl.ID) + "/live"

	b := tc.signedIn(t, "m1001")
	status, _, body := b.get(path)
	if status != http.StatusOK {
		t.Fatalf("live page: %d\n%s", status, body)
	}
	contains(t, body, `data-events="`+path+`/events"`, `class="kpi"`, `id="live-chart"`, "uPlot.iife.min.js", "/console/static/stats.js",
		`<span data-field="stock" id="live-stock">500</span>`, `data-field="refusals.sold_out"`, "已抢光")

	// Three viewers, one poller.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var streams []<-chan snapshot
	for _, name := range []string{"m1001", "m1001", "root"} {
		s := tc.signedIn(t, name).stream(t, ctx, path+"/events")
		next(t, s, "the stock", func(s snapshot) bool { return s.Stock == 500 && s.TotalStock == 500 && s.Issued == 0 })
		streams = append(streams, s)
	}
	if n := console.LivePollers(env.console); n != 1 {
		t.Fatalf("%d pollers for three viewers of one template, want 1", n)
	}

	// Claims: five users get a coupon, one claims again over the limit.
	for u := range int64(5) {
		if _, err := env.claims.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: 100 + u}, tpl.ID, ""); err != nil {
			t.Fatalf("claim of user %d: %v", 100+u, err)
		}
	}
	if _, err := env.claims.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: 100}, tpl.ID, ""); quan.ErrorCode(err) != quan.ELIMIT {
		t.Fatalf("a second claim of user 100: %v, want %s", err, quan.ELIMIT)
	}
	if err := env.refusals.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		got := next(t, s, "the claims", func(s snapshot) bool {
			return s.Issued == 5 && s.Claimed == 5 && s.Stock == 495 && s.Refusals[quan.ELIMIT] == 1 && s.Refused == 1
		})
		if len(got.Chart.X) < 2 || len(got.Chart.Claims) != len(got.Chart.X) {
			t.Errorf("viewer %d: a chart of %d points (%d rates) after several snapshots", i, len(got.Chart.X), len(got.Chart.Claims))
		}
		// The rate saw the claims go through: a second of the window had
		// claims a second above zero.
		if top := slices.Max(got.Chart.Claims); top <= 0 {
			t.Errorf("viewer %d: claims a second %v, none above 0 after 5 claims", i, got.Chart.Claims)
		}
	}
	if n := console.LivePollers(env.console); n != 1 {
		t.Fatalf("%d pollers for three viewers of one template, want 1", n)
	}

	// Another shop's template is not there, page or stream.
	if status, _, _ := b.get("/console/templates/" + itoa(theirs.ID) + "/live"); status != http.StatusNotFound {
		t.Fatalf("another shop's live page: %d, want 404", status)
	}
	req, _ := http.NewRequest(http.MethodGet, tc.URL+"/console/templates/"+itoa(theirs.ID)+"/live/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another shop's live stream: %d, want 404", resp.StatusCode)
	}

	// The viewers leave: the poller stops.
	cancel()
	for deadline := time.Now().Add(10 * time.Second); console.LivePollers(env.console) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d pollers after every viewer left", console.LivePollers(env.console))
		}
	}
}

// TestStatsPages: codes redeemed issue coupons, one is used; the
// template's and the shop's statistics show the numbers and embed the
// hourly series; another shop's are not there.
func TestStatsPages(t *testing.T) {
	var env statsEnv
	tc := newConsole(t, withStats(&env))
	tpl := activeDraft(t, tc, 1001, "stats")
	theirs := activeDraft(t, tc, 1002, "theirs")
	m1001 := quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001, Subject: "merchant:1001"}
	batch, err := env.codes.Create(t.Context(), m1001, tpl.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	env.codes.Wait()
	_, codes, err := env.codes.Export(t.Context(), m1001, batch.ID)
	if err != nil {
		t.Fatal(err)
	}
	var coupons []*quan.Coupon
	u := int64(7)
	for rc, err := range codes {
		if err != nil {
			t.Fatal(err)
		}
		c, err := env.codes.Redeem(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: u}, rc.Code)
		if err != nil {
			t.Fatal(err)
		}
		coupons = append(coupons, c)
		u++
	}
	// The first user pays 120.00 with the coupon: 10.00 off.
	user := quan.Identity{Role: quan.RoleService, KeyID: 1, Scopes: quan.NewScopeSet(quan.ScopeSettlement)}.ForUser(coupons[0].UserID)
	items := []quan.OrderItem{{SKU: "a", ShopNo: 1001, UnitPrice: 12000, Quantity: 1}}
	if _, err := env.wallet.Lock(t.Context(), user, "o-1", wallet.LockRequest{Items: items, CouponIDs: []int64{coupons[0].ID}, ExpectedDiscount: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.wallet.Redeem(t.Context(), user, "o-1"); err != nil {
		t.Fatal(err)
	}

	b := tc.signedIn(t, "m1001")
	status, _, body := b.get("/console/templates/" + itoa(tpl.ID) + "/stats")
	if status != http.StatusOK {
		t.Fatalf("template stats: %d\n%s", status, body)
	}
	contains(t, body, `<span class="v" id="kpi-issued">3</span>`, `<span class="v" id="kpi-used">1</span>`,
		`<span class="v" id="kpi-rate">33.3%</span>`, `<span class="v" id="kpi-discount">10.00</span>`,
		`<span class="v" id="kpi-expired">0</span>`, "兑换码 3", `data-chart="stats-series"`, "uPlot.iife.min.js",
		// The last 24 hours in Shanghai: testNow is 16:00 there.
		`name="from" value="2026-10-31"`, `name="to" value="2026-11-01"`,
		`<td class="nowrap">2026-11-01 16:00:00</td><td class="num">3</td><td class="num">1</td>`)
	series := seriesOf(t, body)
	if len(series.X) != 24 || len(series.Series) != 2 || series.Series[0].Values[23] != 3 || series.Series[1].Values[23] != 1 ||
		series.X[23] != testNow.Truncate(time.Hour).Unix() || series.Series[0].Label != "已发放" {
		t.Fatalf("the hourly series: %+v", series)
	}

	// 7 days, in the operator's zone; the end is cut at the current hour.
	status, _, body = b.get("/console/templates/" + itoa(tpl.ID) + "/stats?from=2026-10-26&to=2026-11-01")
	if status != http.StatusOK {
		t.Fatalf("7 days: %d\n%s", status, body)
	}
	if series := seriesOf(t, body); len(series.X) != 6*24+17 || series.X[0] != time.Date(2026, 10, 25, 16, 0, 0, 0, time.UTC).Unix() {
		t.Fatalf("7 days: %d hours from %d", len(series.X), series.X[0])
	}
	contains(t, body, "最近 30 天", "from=2026-10-03&amp;to=2026-11-01")
	for q, want := range map[string]string{
		"from=yesterday":                "&#34;yesterday&#34; is not a date",
		"from=2026-11-01&to=2026-10-01": "is after to",
		"from=2026-09-01&to=2026-11-01": "at most 31 days",
	} {
		status, _, body := b.get("/console/templates/" + itoa(tpl.ID) + "/stats?" + q)
		if status != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("range %s: %d, want 400 with %q\n%s", q, status, want, body)
		}
	}

	// The shop's: the merchant's own, not another's.
	status, _, body = b.get("/console/stats")
	if status != http.StatusOK {
		t.Fatalf("shop stats: %d\n%s", status, body)
	}
	contains(t, body, "店铺 1001 的统计", `id="kpi-issued">3<`, `id="kpi-discount">10.00<`, "共 1 个模板有数据", `id="stats-series"`)
	if status, _, _ := b.get("/console/stats?shop=1002"); status != http.StatusForbidden {
		t.Fatalf("another shop's statistics to a merchant: %d, want 403", status)
	}
	if status, _, _ := b.get("/console/templates/" + itoa(theirs.ID) + "/stats"); status != http.StatusNotFound {
		t.Fatalf("another shop's template's statistics: %d, want 404", status)
	}
	// An admin picks a shop, or sees every shop's.
	admin := tc.signedIn(t, "root")
	_, _, body = admin.get("/console/stats?shop=1002")
	contains(t, body, "店铺 1002 的统计", `id="kpi-issued">0<`, `name="shop"`)
	_, _, body = admin.get("/console/stats")
	contains(t, body, "全部店铺的统计", `id="kpi-issued">3<`)
	if status, _, body := admin.get("/console/stats?shop=abc"); status != http.StatusBadRequest || !strings.Contains(body, "is not a shop number") {
		t.Fatalf("shop abc: %d\n%s", status, body)
	}
}

var seriesBlock = regexp.MustCompile(`(?s)<script type="application/json" id="stats-series">(.*?)</script>`)

func seriesOf(t *testing.T, body string) (s struct {
	X      []int64
	Series []struct {
		Label  string
		Values []int64
	}
}) {
	t.Helper()
	m := seriesBlock.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no series block:\n%s", body)
	}
	if err := json.Unmarshal([]byte(m[1]), &s); err != nil {
		t.Fatalf("series %s: %v", m[1], err)
	}
	return s
}

// TestCodePages: a batch made from its template's page, its progress, and
// its export with every code.
func TestCodePages(t *testing.T) {
	var env statsEnv
	tc := newConsole(t, withStats(&env))
	tpl := activeDraft(t, tc, 1001, "codes")
	theirs := activeDraft(t, tc, 1002, "theirs")
	b := tc.signedIn(t, "m1001")
	page := "/console/templates/" + itoa(tpl.ID) + "/codes"
	status, _, body := b.get(page)
	if status != http.StatusOK {
		t.Fatalf("codes page: %d\n%s", status, body)
	}
	contains(t, body, `name="count"`, "没有记录")

	status, _, body = b.post(page, url.Values{"count": {"0"}})
	if status != http.StatusBadRequest || !strings.Contains(body, `<span id="count-err"><span class="field-error" role="alert">must be 1`) {
		t.Fatalf("count 0: %d\n%s", status, body)
	}
	if status, _, body = b.post(page, url.Values{"count": {"many"}}); status != http.StatusBadRequest || !strings.Contains(body, "is not a whole number") {
		t.Fatalf("count many: %d\n%s", status, body)
	}

	status, path, body := b.post(page, url.Values{"count": {"25"}})
	if status != http.StatusOK || !strings.HasPrefix(path, "/console/code-batches/") {
		t.Fatalf("create: %d at %s\n%s", status, path, body)
	}
	contains(t, body, "已开始生成 25 个兑换码")
	batch := strings.TrimPrefix(strings.SplitN(path, "?", 2)[0], "/console/code-batches/")
	env.codes.Wait()
	status, _, body = b.get("/console/code-batches/" + batch)
	if status != http.StatusOK {
		t.Fatalf("batch page: %d\n%s", status, body)
	}
	contains(t, body, `<span data-field="generated" id="batch-generated">25</span>`, "已完成", batch+"/codes.csv", batch+"/codes.xlsx")
	_, _, body = b.get(page)
	contains(t, body, `<a href="/console/code-batches/`+batch+`">`, "25 / 25")

	// The progress stream ends once the batch is ready.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	events := b.stream(t, ctx, "/console/code-batches/"+batch+"/events")
	for range events {
	}
	if ctx.Err() != nil {
		t.Fatal("the stream of a ready batch did not end")
	}

	resp, err := b.http.Get(tc.URL + "/console/code-batches/" + batch + "/codes.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(rows) != 26 || rows[0][0] != "code" {
		t.Fatalf("csv export: %d, %d rows, %v", resp.StatusCode, len(rows), err)
	}
	for _, row := range rows[1:] {
		if _, err := quan.ParseCode(row[0]); err != nil {
			t.Fatalf("exported code %q: %v", row[0], err)
		}
	}
	resp, err = b.http.Get(tc.URL + "/console/code-batches/" + batch + "/codes.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "spreadsheetml") {
		t.Fatalf("xlsx export: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// Another shop's template and batch are not there.
	other := tc.signedIn(t, "m1002")
	for _, p := range []string{"/console/code-batches/" + batch, "/console/code-batches/" + batch + "/codes.csv", page} {
		if status, _, _ := other.get(p); status != http.StatusNotFound {
			t.Errorf("%s to another shop: %d, want 404", p, status)
		}
	}
	if status, _, _ := other.post(page, url.Values{"count": {"5"}}); status != http.StatusNotFound {
		t.Errorf("a batch of another shop's template: %d, want 404", status)
	}
	if status, _, _ := b.get("/console/templates/" + itoa(theirs.ID) + "/codes"); status != http.StatusNotFound {
		t.Errorf("another shop's template's codes: %d, want 404", status)
	}
	if bs, _ := env.codes.List(t.Context(), quan.Identity{Role: quan.RoleAdmin}, theirs.ID); len(bs) != 0 {
		t.Errorf("another shop's template has batches %+v", bs)
	}
}
