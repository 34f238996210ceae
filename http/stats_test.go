package http_test

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/stats"
)

// TestStatsEndToEnd: a distribution, claims (one issued, two refused by
// the cache), a redemption and the expiry of the rest, each seen in the
// template's and the shop's statistics over HTTP.
func TestStatsEndToEnd(t *testing.T) {
	refusals := &stats.RefusalCounter{}
	ts := newClaimServer(t, func(ts *testServer) {
		refusals.Store = ts.store
		ts.claims.Refusals = refusals
	})
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 3, 1)
	statsURL := fmt.Sprintf("/api/v1/templates/%d/stats", tpl.ID)

	task := ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n7\n8\n"), nil)
	if task.Counts.Issued != 2 {
		t.Fatalf("distribution: %+v", task.Counts)
	}
	if c := ts.claimed(t, ts.user(t, 9), tpl.ID); c.Status != quan.ClaimIssued {
		t.Fatalf("claim: %+v", c)
	}
	ts.claim(t, ts.user(t, 7), tpl.ID).want(t, http.StatusConflict, quan.ELIMIT)
	ts.claim(t, ts.user(t, 10), tpl.ID).want(t, http.StatusConflict, quan.ESOLDOUT)
	if err := refusals.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	// User 7 pays 120.00 with the coupon: 10.00 off.
	var page struct{ Items []quan.Coupon }
	ts.do(t, "GET", "/api/v1/me/coupons", ts.user(t, 7), nil).decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("user 7 holds %+v", page.Items)
	}
	u7 := ts.user(t, 7)
	ts.settle(t, u7, "/api/v1/orders/o-1/lock", map[string]any{
		"items": orderItems(12_000), "couponIds": []int64{page.Items[0].ID}, "expectedDiscount": 1000}).want(t, http.StatusOK, "")
	ts.settle(t, u7, "/api/v1/orders/o-1/redeem", nil).want(t, http.StatusOK, "")

	get := func(url, token string, v any) {
		t.Helper()
		r := ts.do(t, "GET", url, token, nil)
		r.want(t, http.StatusOK, "")
		r.decode(t, v)
	}
	var st quan.TemplateStats
	get(statsURL, m, &st)
	want := quan.StatsCounts{
		Issued:    quan.IssuedCounts{Total: 3, Distribution: 2, Claim: 1},
		Available: 2, Used: 1, DiscountFen: 1000, RedemptionRate: 1.0 / 3,
		Claims: quan.ClaimTallies{Refused: map[string]int64{quan.ELIMIT: 1, quan.ESOLDOUT: 1}, Failed: map[string]int64{}},
	}
	assertCounts(t, "after the redemption", st.StatsCounts, want)
	if st.TemplateID != tpl.ID || st.ShopNo != 1 || len(st.Hourly) != 24 {
		t.Fatalf("template %d shop %d, %d hours; want %d, 1, the default 24", st.TemplateID, st.ShopNo, len(st.Hourly), tpl.ID)
	}
	// Everything happened in testNow's hour, the last of the default range.
	if h := st.Hourly[23]; !h.Hour.Equal(testNow.Truncate(time.Hour)) || h.Issued != 3 || h.Used != 1 {
		t.Errorf("the last hour: %+v, want %s with 3 issued, 1 used", h, testNow)
	}

	// Three days on the other coupons' windows have closed: the sweep
	// expires them.
	ts.setNow(testNow.Add(73 * time.Hour))
	m = ts.merchant(t, 1) // the first token has run out
	if n, err := ts.api.Wallet.Sweep(t.Context(), 100); err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2", n, err)
	}
	from := testNow.Add(-time.Hour).Format(time.RFC3339)
	to := testNow.Add(2 * time.Hour).Format(time.RFC3339)
	st = quan.TemplateStats{}
	get(statsURL+"?from="+from+"&to="+to, m, &st)
	want.Available, want.Expired = 0, 2
	assertCounts(t, "after the expiry", st.StatsCounts, want)
	if len(st.Hourly) != 3 || st.Hourly[1].Issued != 3 || st.Hourly[1].Used != 1 || st.Hourly[0].Issued != 0 {
		t.Errorf("hours from %s to %s: %+v", from, to, st.Hourly)
	}

	// The shop's totals are the template's: the merchant's own shop, an
	// admin's choice of it, or every shop.
	var shop quan.ShopStats
	get("/api/v1/stats", m, &shop)
	assertCounts(t, "the merchant's shop", shop.StatsCounts, want)
	if shop.ShopNo != 1 || shop.Templates != 1 {
		t.Errorf("shop %d with %d templates, want 1 and 1", shop.ShopNo, shop.Templates)
	}
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	get("/api/v1/stats?shopNo=1", admin, &shop)
	assertCounts(t, "shop 1 to an admin", shop.StatsCounts, want)
	get("/api/v1/stats", admin, &shop)
	assertCounts(t, "every shop to an admin", shop.StatsCounts, want)
	shop = quan.ShopStats{}
	get("/api/v1/stats?shopNo=2", admin, &shop)
	if shop.ShopNo != 2 || shop.Issued.Total != 0 || shop.Templates != 0 {
		t.Errorf("shop 2, which has no template: %+v", shop)
	}
}

func assertCounts(t *testing.T, what string, got, want quan.StatsCounts) {
	t.Helper()
	gr, gf, wr, wf := got.Claims.Refused, got.Claims.Failed, want.Claims.Refused, want.Claims.Failed
	got.Claims, want.Claims = quan.ClaimTallies{}, quan.ClaimTallies{}
	if !reflect.DeepEqual(got, want) || !maps.Equal(gr, wr) || !maps.Equal(gf, wf) {
		t.Errorf("%s:\n got %+v refused %v failed %v\nwant %+v refused %v failed %v", what, got, gr, gf, want, wr, wf)
	}
}

// TestStatsRefused: who may see which statistics, and ranges that are
// refused with the parameter at fault.
func TestStatsRefused(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 3, 1)
	statsURL := fmt.Sprintf("/api/v1/templates/%d/stats", tpl.ID)

	ts.do(t, "GET", statsURL, "", nil).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	ts.do(t, "GET", statsURL, ts.merchant(t, 2), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", statsURL, ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 7}), nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "GET", "/api/v1/templates/999/stats", m, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", "/api/v1/stats?shopNo=2", m, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)

	for _, c := range []struct{ query, field, says string }{
		{"from=yesterday", "from", "RFC 3339"},
		{"to=2026-11-01", "to", "RFC 3339"},
		{"from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "from", "after to"},
		{"from=2026-10-01T00:00:00Z&to=2026-11-02T00:00:00Z", "to", "31 days"},
	} {
		for _, u := range []string{statsURL, "/api/v1/stats"} {
			r := ts.do(t, "GET", u+"?"+c.query, m, nil)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if len(r.Problem.Errors) != 1 || r.Problem.Errors[0].Field != c.field || !strings.Contains(r.Problem.Errors[0].Message, c.says) {
				t.Errorf("GET %s?%s: %+v, want %s: …%s…", u, c.query, r.Problem.Errors, c.field, c.says)
			}
		}
	}
	// 31 days exactly is allowed.
	var st quan.TemplateStats
	r := ts.do(t, "GET", statsURL+"?from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z", m, nil)
	r.want(t, http.StatusOK, "")
	r.decode(t, &st)
	if len(st.Hourly) != 31*24 || st.Issued.Total != 0 || st.Claims.Refused == nil {
		t.Errorf("31 days of a template with no coupon: %d hours, %+v", len(st.Hourly), st.StatsCounts)
	}
}
