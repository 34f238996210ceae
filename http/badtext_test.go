package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

// withText is body as JSON with the string value "TEXT" written as text,
// byte for byte: an escape such as \ud800, or bytes that are not UTF-8.
func withText(t *testing.T, body any, text string) []byte {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"TEXT"`)) {
		t.Fatalf("%s has no \"TEXT\"", b)
	}
	return bytes.ReplaceAll(b, []byte(`"TEXT"`), []byte(`"`+text+`"`))
}

// TestBadTextInBodies: a string in a JSON body holding half of a UTF-16
// surrogate pair ("\ud800", "\udc00"), bytes that are not UTF-8 (a lone
// 0xff, UTF-8 of a surrogate) or a control character other than tab,
// line feed and carriage return (\u0000, ESC, DEL, a C1 character) is
// 400 naming the field by its JSON path on every route that takes a JSON
// body: encoding/json alone would store the first ones as U+FFFD without
// a word. Nothing is stored. A whole surrogate pair and a U+FFFD sent as
// such are text like any other.
func TestBadTextInBodies(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	u := ts.user(t, 5)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin})
	draft := ts.create(t, m, validTemplate())
	active := ts.activeTemplate(t, m, 10, 1)
	withTemplate := func(k string, v any) map[string]any {
		b := validTemplate()
		b[k] = v
		return b
	}
	routes := []struct {
		name, method, path, token string
		body                      any
		field                     string
	}{
		{"TemplateName", "POST", "/api/v1/templates", m, withTemplate("name", "TEXT"), "name"},
		{"TemplateScopeID", "POST", "/api/v1/templates", m, withTemplate("scope", map[string]any{"type": "goods", "ids": []string{"ok", "TEXT"}}), "scope.ids[1]"},
		{"EditDescription", "PATCH", loc(draft.ID), m, map[string]any{"description": "TEXT"}, "description"},
		{"RulesEligibility", "POST", loc(active.ID) + "/rules", m, map[string]any{"eligibility": "TEXT"}, "eligibility"},
		{"QuoteChannel", "POST", "/api/v1/settlement/quote", u, map[string]any{"items": order(10000), "channel": "TEXT"}, "channel"},
		{"QuoteSKU", "POST", "/api/v1/settlement/quote", u, map[string]any{"items": []map[string]any{{"sku": "TEXT", "shopNo": 1, "unitPrice": 100, "quantity": 1}}}, "items[0].sku"},
		{"LockCategory", "POST", "/api/v1/orders/o-1/lock", ts.orderKey, map[string]any{"items": []map[string]any{{"sku": "a", "category": "TEXT", "shopNo": 1, "unitPrice": 100, "quantity": 1}}, "couponIds": []int{1}}, "items[0].category"},
		{"RedeemCode", "POST", "/api/v1/codes/redeem", u, map[string]any{"code": "TEXT"}, "code"},
		{"ContactMail", "PUT", "/api/v1/me/contact", u, map[string]any{"mail": "TEXT"}, "mail"},
		{"FactsTag", "PUT", "/api/v1/users/5/attributes", admin, map[string]any{"tags": []string{"vip", "TEXT"}}, "tags[1]"},
		{"FactsAttr", "PUT", "/api/v1/users/5/attributes", admin, map[string]any{"attrs": map[string]string{"city": "TEXT"}}, "attrs.city"},
		{"RetryName", "POST", "/api/v1/tasks/1/retry", m, map[string]any{"name": "TEXT"}, "name"},
	}
	texts := []struct{ name, text string }{
		{"LoneHighSurrogate", `a\ud800b`},
		{"LoneLowSurrogate", `a\udc00b`},
		{"HighSurrogateThenLetter", `a\ud800\u0041`},
		{"InvalidUTF8", "a\xffb"},
		{"UTF8OfASurrogate", "a\xed\xa0\x80b"},
		{"EscapedNUL", `a\u0000b`},
		{"EscapedESC", `a\u001bb`},
		{"RawDEL", "a\x7fb"},
		{"RawC1", "a\u0085b"},
	}
	for _, rt := range routes {
		for _, tx := range texts {
			t.Run(rt.name+"/"+tx.name, func(t *testing.T) {
				r := ts.do(t, rt.method, rt.path, rt.token, withText(t, rt.body, tx.text))
				r.want(t, http.StatusBadRequest, quan.EINVALID)
				if !r.hasField(rt.field) {
					t.Fatalf("errors %+v do not name %s", r.Problem.Errors, rt.field)
				}
			})
		}
	}
	t.Run("NothingStored", func(t *testing.T) {
		var page struct{ Total int }
		ts.do(t, "GET", "/api/v1/templates", m, nil).decode(t, &page)
		if page.Total != 2 {
			t.Fatalf("%d templates, want the 2 made before", page.Total)
		}
		var got quan.Template
		ts.do(t, "GET", loc(draft.ID), m, nil).decode(t, &got)
		if got.Description != draft.Description {
			t.Fatalf("description %q after refused edits", got.Description)
		}
		if c := ts.contact(t, admin, 5); c.Mail != "" {
			t.Fatalf("contact %+v stored", c)
		}
		if f := ts.facts(t, admin, 5); len(f.Tags) != 0 || len(f.Attrs) != 0 {
			t.Fatalf("facts %+v stored", f)
		}
	})
	t.Run("WholeTextTaken", func(t *testing.T) {
		for _, text := range []string{`a\ud83c\udf9fb`, "a\U0001F39Fb", `a\ufffdb`, "a\uFFFDb", `tab\there`} {
			r := ts.do(t, "PATCH", loc(draft.ID), m, withText(t, map[string]any{"description": "TEXT"}, text))
			r.want(t, http.StatusOK, "")
		}
		r := ts.do(t, "POST", "/api/v1/templates", m, withText(t, withTemplate("name", "TEXT"), `a\ud83c\udf9fb`))
		r.want(t, http.StatusCreated, "")
		var tpl quan.Template
		r.decode(t, &tpl)
		if tpl.Name != "a🎟b" {
			t.Fatalf("name %q, want a🎟b", tpl.Name)
		}
	})
}

// TestControlCharactersInIDsAndNames: an id or a name (an order id, a
// code, a template's scope id, a task's name or sheet, a tag, an order's
// channel or sku, a list's name filter, an Idempotency-Key) holding a NUL
// or another control character, or bytes that are not UTF-8, is 400
// naming it, wherever it comes from: the path, the query, a JSON body
// (where tab and line feed are text, but not in an id), a form. Nothing
// is stored: the coupon an order would lock stays available.
func TestControlCharactersInIDsAndNames(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	u := ts.user(t, 7)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin})
	c := ts.walletCoupon(t, 7)
	tpl := ts.activeTemplate(t, m, 10, 1)
	lock := map[string]any{"items": order(10000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	uploads := countUploads(t, ts.dir) // the distribution's file
	withTemplate := func(k string, v any) map[string]any {
		b := validTemplate()
		b[k] = v
		return b
	}
	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		field                     string
	}{
		{"OrderNUL", "POST", "/api/v1/orders/a%00b/lock", ts.orderKey, lock, "order"},
		{"OrderTab", "POST", "/api/v1/orders/a%09b/lock", ts.orderKey, lock, "order"},
		{"OrderInvalidUTF8", "POST", "/api/v1/orders/a%FFb/lock", ts.orderKey, lock, "order"},
		{"OrderBidi", "POST", "/api/v1/orders/a%E2%80%AEb/lock", ts.orderKey, lock, "order"},
		{"RedeemOrderNUL", "POST", "/api/v1/orders/a%00b/redeem", ts.orderKey, nil, "order"},
		{"ReleaseOrderNUL", "POST", "/api/v1/orders/a%00b/release", ts.orderKey, nil, "order"},
		{"RefundOrderNUL", "POST", "/api/v1/orders/a%00b/refund", ts.orderKey, nil, "order"},
		{"CodePathNUL", "GET", "/api/v1/coupons/by-code/%00" + strings.Repeat("A", 16), m, nil, "code"},
		{"RedeemCodeTab", "POST", "/api/v1/codes/redeem", u, map[string]any{"code": "ABCD\tEFGH"}, "code"},
		{"ScopeIDLineFeed", "POST", "/api/v1/templates", m, withTemplate("scope", map[string]any{"type": "goods", "ids": []string{"sku\n1"}}), "scope.ids[0]"},
		{"TemplateNameTab", "POST", "/api/v1/templates", m, withTemplate("name", "满100\t减10"), "name"},
		{"QuoteChannelLineFeed", "POST", "/api/v1/settlement/quote", u, map[string]any{"items": order(10000), "channel": "app\n"}, "channel"},
		{"QuoteSKUTab", "POST", "/api/v1/settlement/quote", u, map[string]any{"items": []map[string]any{{"sku": "a\tb", "shopNo": 1, "unitPrice": 100, "quantity": 1}}}, "items[0].sku"},
		{"FactsTagLineFeed", "PUT", "/api/v1/users/7/attributes", admin, map[string]any{"tags": []string{"vip\n"}}, "tags[0]"},
		{"FactsRegionTab", "PUT", "/api/v1/users/7/attributes", admin, map[string]any{"region": "sh\t"}, "region"},
		{"ListNameNUL", "GET", "/api/v1/templates?name=a%00b", m, nil, "name"},
		{"ListNameInvalidUTF8", "GET", "/api/v1/templates?name=a%FFb", m, nil, "name"},
		{"ListStatusNUL", "GET", "/api/v1/tasks?status=%00", m, nil, "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, tc.method, tc.path, tc.token, tc.body)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if !r.hasField(tc.field) {
				t.Fatalf("errors %+v do not name %s", r.Problem.Errors, tc.field)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		fields map[string]string
		field  string
	}{
		{"TaskNameNUL", map[string]string{"name": "双十一\x00", "templateId": fmt.Sprint(tpl.ID)}, "name"},
		{"TaskNameInvalidUTF8", map[string]string{"name": "a\xffb", "templateId": fmt.Sprint(tpl.ID)}, "name"},
		{"TaskSheetControl", map[string]string{"name": "t", "templateId": fmt.Sprint(tpl.ID), "sheet": "Sheet\x011"}, "sheet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.upload(t, m, tc.fields, "users.csv", []byte("userId\n1\n"))
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if !r.hasField(tc.field) {
				t.Fatalf("errors %+v do not name %s", r.Problem.Errors, tc.field)
			}
		})
	}
	t.Run("IdempotencyKeyNotASCII", func(t *testing.T) {
		r := ts.doKey(t, "POST", "/api/v1/templates", m, "key-\x80\x81", validTemplate())
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField("Idempotency-Key") {
			t.Fatalf("errors %+v do not name Idempotency-Key", r.Problem.Errors)
		}
	})
	t.Run("NothingStored", func(t *testing.T) {
		var got quan.Coupon
		ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", c.ID), u, nil).decode(t, &got)
		if got.Status != quan.CouponAvailable || got.OrderID != "" {
			t.Fatalf("coupon %+v after refused locks", got)
		}
		var page struct{ Total int }
		ts.do(t, "GET", "/api/v1/templates", m, nil).decode(t, &page)
		if page.Total != 2 { // walletCoupon's and tpl
			t.Fatalf("%d templates, want 2", page.Total)
		}
		ts.do(t, "GET", "/api/v1/tasks", m, nil).decode(t, &page)
		if page.Total != 1 { // walletCoupon's distribution
			t.Fatalf("%d tasks, want 1", page.Total)
		}
		if f := ts.facts(t, admin, 7); len(f.Tags) != 0 || f.Region != "" {
			t.Fatalf("facts %+v stored", f)
		}
		if n := countUploads(t, ts.dir); n != uploads {
			t.Fatalf("%d uploads kept, %d before", n, uploads)
		}
	})
	// The same order, with a plain id, locks: the refusals were the id's.
	t.Run("PlainOrderLocks", func(t *testing.T) {
		ts.settle(t, u, "/api/v1/orders/o-1/lock", lock).want(t, http.StatusOK, "")
	})
}

// countUploads is how many files the data folder's uploads hold.
func countUploads(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, "uploads"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(es)
}
