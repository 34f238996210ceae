package http_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

// TestBodyErrorsNameAPIFields sends bodies that do not fit their endpoint
// and checks that each problem names the field by its JSON path in the
// API, in words a client knows: never a Go type, a Go struct name or a
// time layout.
func TestBodyErrorsNameAPIFields(t *testing.T) {
	ts := newTestServer(t)
	merchant := ts.merchant(t, 1001)
	user := ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 42})
	tpl := ts.create(t, merchant, validTemplate())
	const rfc3339 = "not an RFC 3339 time (e.g. 2026-11-11T00:00:00+08:00)"
	tests := []struct {
		name, method, path, token, body string
		field, message                  string // message is a part of the field's message
	}{
		{"CreateArray", "POST", "/api/v1/templates", merchant, `[1,2]`, "body", "must be a JSON object"},
		{"CreateNumber", "POST", "/api/v1/templates", merchant, `7`, "body", "must be a JSON object"},
		{"AmountOverflows", "POST", "/api/v1/templates", merchant, `{"rule":{"amount":99999999999999999999}}`, "rule.amount", "out of range"},
		{"AmountExponent", "POST", "/api/v1/templates", merchant, `{"rule":{"amount":1e30}}`, "rule.amount", "out of range"},
		{"AmountFraction", "POST", "/api/v1/templates", merchant, `{"rule":{"amount":1.5}}`, "rule.amount", "must be a whole number"},
		{"RuleArray", "POST", "/api/v1/templates", merchant, `{"rule":[1]}`, "rule", "must be a JSON object"},
		{"BadTime", "POST", "/api/v1/templates", merchant, `{"issueStart":"tomorrow"}`, "issueStart", rfc3339},
		{"BadMonth", "POST", "/api/v1/templates", merchant, `{"issueEnd":"2026-13-01T00:00:00Z"}`, "issueEnd", rfc3339},
		{"TimeNotString", "POST", "/api/v1/templates", merchant, `{"validity":{"type":"fixed","end":5}}`, "validity.end", rfc3339},
		{"ScopeIDNumber", "POST", "/api/v1/templates", merchant, `{"scope":{"type":"goods","ids":["a",7]}}`, "scope.ids[1]", "must be a string"},
		{"UnknownNested", "POST", "/api/v1/templates", merchant, `{"rule":{"amont":5}}`, "rule.amont", "is not a known field"},
		{"EditName", "PATCH", loc(tpl.ID), merchant, `{"name":5}`, "name", "must be a string"},
		{"EditTime", "PATCH", loc(tpl.ID), merchant, `{"issueEnd":"2026-11-31"}`, "issueEnd", rfc3339},
		{"StockArray", "POST", loc(tpl.ID) + "/stock", merchant, `[1]`, "body", "must be a JSON object"},
		{"StockFraction", "POST", loc(tpl.ID) + "/stock", merchant, `{"amount":1.5}`, "amount", "must be a whole number"},
		{"CodeBatchCount", "POST", loc(tpl.ID) + "/code-batches", merchant, `{"count":"ten"}`, "count", "must be a whole number"},
		{"RedeemCode", "POST", "/api/v1/codes/redeem", user, `{"code":123}`, "code", "must be a string"},
		{"QuoteQuantity", "POST", "/api/v1/settlement/quote", user, `{"items":[{"sku":"a","quantity":1},{"sku":"b","quantity":"2"}]}`, "items[1].quantity", "must be a whole number"},
		{"LockCouponID", "POST", "/api/v1/orders/o-1/lock", ts.orderKey, `{"couponIds":[1,"x"]}`, "couponIds[1]", "must be a whole number"},
		{"LockItems", "POST", "/api/v1/orders/o-1/lock", ts.orderKey, `{"items":{}}`, "items", "must be a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(t, tt.method, tt.path, tt.token, tt.body)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			assertNoGoWords(t, r)
			for _, f := range r.Problem.Errors {
				if f.Field == tt.field && strings.Contains(f.Message, tt.message) {
					return
				}
			}
			t.Fatalf("errors %+v do not say %q of %q", r.Problem.Errors, tt.message, tt.field)
		})
	}
	t.Run("EveryProblemAtOnce", func(t *testing.T) {
		r := ts.do(t, "POST", "/api/v1/templates", merchant, `{"name":5,"stock":"x","nmae":1,"validity":{"start":"soon"}}`)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		assertNoGoWords(t, r)
		for _, f := range []string{"name", "stock", "nmae", "validity.start"} {
			if !r.hasField(f) {
				t.Errorf("errors %+v do not name %q", r.Problem.Errors, f)
			}
		}
	})
	t.Run("Bounded", func(t *testing.T) {
		r := ts.do(t, "POST", "/api/v1/settlement/quote", user, `{"items":[`+strings.Repeat(`{"quantity":"x"},`, 999)+`{}]}`)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if n := len(r.Problem.Errors); n == 0 || n > 20 {
			t.Fatalf("%d field errors for 999 bad items, want 1 to 20", n)
		}
	})
}

// assertNoGoWords fails if a problem shows Go's names or layouts.
func assertNoGoWords(t *testing.T, r response) {
	t.Helper()
	for _, w := range []string{"quan.", "int64", "TemplateSpec", "struct {", "2006-01-02", "15:04:05", "UnmarshalJSON", "json:"} {
		if strings.Contains(string(r.Body), w) {
			t.Fatalf("problem shows %q: %s", w, r.Body)
		}
	}
	for _, f := range r.Problem.Errors {
		if f.Field == "" {
			t.Fatalf("problem has an unnamed field: %s", r.Body)
		}
	}
}
