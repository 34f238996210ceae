package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/wallet"
)

// searchAll pages through query (without cursor) with limit and returns
// the ids in the order served.
func (ts *testServer) searchAll(t *testing.T, token, query string, limit int) []int64 {
	t.Helper()
	var ids []int64
	cursor := int64(0)
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%s: more than 100 pages", query)
		}
		path := fmt.Sprintf("/api/v1/coupons?%s&limit=%d", query, limit)
		if cursor != 0 {
			path += fmt.Sprintf("&cursor=%d", cursor)
		}
		var page struct {
			Items      []quan.Coupon
			NextCursor int64
		}
		ts.do(t, "GET", path, token, nil).decode(t, &page)
		if len(page.Items) > limit {
			t.Fatalf("%s: a page of %d, limit %d", path, len(page.Items), limit)
		}
		for _, c := range page.Items {
			ids = append(ids, c.ID)
		}
		if page.NextCursor == 0 {
			return ids
		}
		cursor = page.NextCursor
	}
}

func TestCouponSearch(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	a := ts.activeTemplate(t, m, 100, 1)
	var users strings.Builder
	users.WriteString("userId\n")
	for u := 1; u <= 25; u++ {
		fmt.Fprintf(&users, "%d\n", u)
	}
	task := ts.distribute(t, m, a.ID, "users.csv", []byte(users.String()), nil)
	if task.Counts.Issued != 25 {
		t.Fatalf("distribution: %+v", task.Counts)
	}
	b := ts.shopCoupon(t, 1, 7)     // a second template's coupon of user 7
	other := ts.shopCoupon(t, 2, 7) // shop 2's coupon of user 7

	// By template, 7 a page: every coupon once, newest first.
	ids := ts.searchAll(t, m, fmt.Sprintf("templateId=%d", a.ID), 7)
	if len(ids) != 25 {
		t.Fatalf("template search served %d coupons, want 25: %v", len(ids), ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Fatalf("template search not newest first, or repeating: %v", ids)
		}
	}
	if got := ts.searchAll(t, m, fmt.Sprintf("taskId=%d", task.ID), 10); len(got) != 25 {
		t.Fatalf("task search: %d coupons, want 25", len(got))
	}
	if got := ts.searchAll(t, m, fmt.Sprintf("templateId=%d&status=available", a.ID), 100); len(got) != 25 {
		t.Fatalf("template and status search: %d coupons, want 25", len(got))
	}
	if got := ts.searchAll(t, m, fmt.Sprintf("templateId=%d&status=used", a.ID), 100); len(got) != 0 {
		t.Fatalf("no coupon is used, search found %v", got)
	}

	// By user: the shop's coupons of user 7 only, not shop 2's.
	got := ts.searchAll(t, m, "userId=7", 100)
	if len(got) != 2 || got[0] != b.ID {
		t.Fatalf("user 7's coupons of shop 1: %v, want 2, newest %d", got, b.ID)
	}
	if got := ts.searchAll(t, m, fmt.Sprintf("userId=7&templateId=%d", a.ID), 100); len(got) != 1 || got[0] == b.ID {
		t.Fatalf("user 7's coupons of template %d: %v", a.ID, got)
	}
	if got := ts.searchAll(t, ts.merchant(t, 2), "userId=7", 100); len(got) != 1 || got[0] != other.ID {
		t.Fatalf("shop 2 sees %v, want its own coupon %d only", got, other.ID)
	}
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin})
	if got := ts.searchAll(t, admin, "userId=7", 100); len(got) != 3 {
		t.Fatalf("an admin sees %v of user 7, want 3 coupons", got)
	}

	// By code, as typed; another shop's code finds nothing.
	if got := ts.searchAll(t, m, "code="+strings.ToLower(b.Code), 100); len(got) != 1 || got[0] != b.ID {
		t.Fatalf("code %s: %v, want %d", b.Code, got, b.ID)
	}
	if got := ts.searchAll(t, m, "code="+other.Code, 100); len(got) != 0 {
		t.Fatalf("shop 1 finds shop 2's code: %v", got)
	}

	// A service key with coupons:read searches its shop; one without may not.
	if got := ts.searchAll(t, ts.key(t, "cs", 1, quan.ScopeCouponsRead), "userId=7", 100); len(got) != 2 {
		t.Fatalf("a coupons:read key of shop 1: %v", got)
	}
	ts.do(t, "GET", "/api/v1/coupons?userId=7", ts.key(t, "tpl", 1, quan.ScopeTemplates), nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "GET", "/api/v1/coupons?userId=7", ts.user(t, 7), nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "GET", "/api/v1/coupons?userId=7", "", nil).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)

	// Bad input is a 400 naming the field.
	for q, field := range map[string]string{
		"":                        "userId",
		"status=available":        "userId",
		"userId=x":                "userId",
		"userId=7&status=lost":    "status",
		"userId=7&limit=101":      "limit",
		"userId=7&cursor=-4":      "cursor",
		"userId=7&from=yesterday": "from",
		"code=not-a-code":         "code",
		"userId=7&from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z": "to",
	} {
		if r := ts.do(t, "GET", "/api/v1/coupons?"+q, m, nil); r.Status != http.StatusBadRequest || !r.hasField(field) {
			t.Errorf("?%s: %d %+v, want 400 naming %s", q, r.Status, r.Problem, field)
		}
	}

	// The time range is on the time of issue.
	if got := ts.searchAll(t, m, "userId=7&to="+testNow.Add(-time.Hour).Format("2006-01-02T15:04:05Z"), 100); len(got) != 0 {
		t.Fatalf("coupons issued before an hour ago: %v", got)
	}
	if got := ts.searchAll(t, m, "userId=7&from="+testNow.Add(-time.Hour).Format("2006-01-02T15:04:05Z"), 100); len(got) != 2 {
		t.Fatalf("coupons issued since an hour ago: %v", got)
	}
}

func TestCouponRevokeAndHistory(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	c := ts.walletCoupon(t, 7)
	path := fmt.Sprintf("/api/v1/coupons/%d", c.ID)
	revoke := func(token string, body any) response {
		return ts.do(t, "POST", path+"/revoke", token, body)
	}

	var h wallet.History
	ts.do(t, "GET", path, m, nil).decode(t, &h)
	if h.Coupon.ID != c.ID || len(h.Events) != 1 || h.Events[0].Type != quan.EventCouponIssued ||
		h.Events[0].Source != quan.FromDistribution || h.Events[0].TaskID == 0 || len(h.Audit) != 0 {
		t.Fatalf("history of a coupon distributed: %+v", h)
	}
	ts.do(t, "GET", path, ts.merchant(t, 2), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", path, ts.key(t, "cs", 1, quan.ScopeCouponsRead), nil).want(t, http.StatusOK, "")

	// Who may not, and what is not a reason.
	reason := map[string]any{"reason": "granted by mistake"}
	revoke(ts.merchant(t, 2), reason).want(t, http.StatusNotFound, quan.ENOTFOUND)
	revoke(ts.key(t, "cs", 1, quan.ScopeCouponsRead), reason).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	revoke(ts.user(t, 7), reason).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	for _, body := range []map[string]any{{}, {"reason": "  "}, {"reason": strings.Repeat("x", quan.MaxReasonLen+1)}} {
		if r := revoke(m, body); r.Status != http.StatusBadRequest || !r.hasField("reason") {
			t.Fatalf("revoke with %v: %d %+v, want 400 naming reason", body, r.Status, r.Problem)
		}
	}

	// A locked coupon is refused, saying its order must release it.
	u := ts.user(t, 7)
	lock := map[string]any{"items": orderItems(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	ts.settle(t, u, "/api/v1/orders/o-1/lock", lock).want(t, http.StatusOK, "")
	r := revoke(m, reason)
	r.want(t, http.StatusConflict, quan.ETRANSITION)
	if !strings.Contains(r.Problem.Detail, "release") || !strings.Contains(r.Problem.Detail, "o-1") {
		t.Fatalf("revoking a locked coupon: %+v, want why (order o-1 must release it)", r.Problem)
	}
	ts.settle(t, u, "/api/v1/orders/o-1/release", nil).want(t, http.StatusOK, "")

	var got quan.Coupon
	revoke(m, reason).decode(t, &got)
	if got.Status != quan.CouponRevoked {
		t.Fatalf("revoked: %+v", got)
	}
	revoke(m, reason).want(t, http.StatusConflict, quan.ETRANSITION)
	ts.do(t, "POST", path+"/revoke", ts.token(t, quan.Identity{Role: quan.RoleAdmin}), reason).want(t, http.StatusConflict, quan.ETRANSITION)

	// The user sees it revoked; the history tells each step.
	ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", c.ID), u, nil).decode(t, &got)
	if got.Status != quan.CouponRevoked {
		t.Fatalf("the user's coupon: %+v", got)
	}
	ts.do(t, "GET", path, m, nil).decode(t, &h)
	var types []quan.EventType
	for _, e := range h.Events {
		types = append(types, e.Type)
	}
	want := []quan.EventType{quan.EventCouponIssued, quan.EventCouponLocked, quan.EventCouponReleased, quan.EventCouponRevoked}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("history %v, want %v", types, want)
	}
	if h.Events[1].OrderID != "o-1" || h.Events[3].Previous != quan.CouponAvailable {
		t.Fatalf("history: %+v", h.Events)
	}
	if len(h.Audit) != 1 || h.Audit[0].Actor != "merchant:1" || h.Audit[0].Reason != "granted by mistake" ||
		h.Audit[0].Action != quan.ActionRevokeCoupon {
		t.Fatalf("audit: %+v", h.Audit)
	}
	// The template's statistics count it revoked, no longer available.
	var st quan.TemplateStats
	ts.do(t, "GET", fmt.Sprintf("/api/v1/templates/%d/stats", c.TemplateID), m, nil).decode(t, &st)
	if st.Revoked != 1 || st.Available != 0 {
		t.Fatalf("statistics after the revocation: %+v", st.StatsCounts)
	}
	// The revoked coupon counts in the search by status.
	if ids := ts.searchAll(t, m, "userId=7&status=revoked", 100); len(ids) != 1 || ids[0] != c.ID {
		t.Fatalf("revoked coupons of user 7: %v", ids)
	}
}
