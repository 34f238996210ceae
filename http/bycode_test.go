package http_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

// withCheck returns body followed by the check symbol that makes it a
// well-formed code, found by asking ParseCode.
func withCheck(t *testing.T, body string) string {
	t.Helper()
	for i := range len(quan.CodeAlphabet) {
		if c, err := quan.ParseCode(body + string(quan.CodeAlphabet[i])); err == nil {
			return c
		}
	}
	t.Fatalf("no check symbol makes %q a code", body)
	return ""
}

// TestCouponByCode: a merchant finds a coupon of their shop by the code
// the wallet shows, however it is typed; a mistyped code is a 400 naming
// the check symbol, a well-formed code nobody holds a 404.
func TestCouponByCode(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	body := validTemplate()
	body["codePrefix"] = "Q7"
	tpl := ts.create(t, m, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	if task := ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n7\n8\n"), nil); task.Counts.Issued != 2 {
		t.Fatalf("distribution: %+v", task.Counts)
	}
	var page struct{ Items []quan.Coupon }
	ts.do(t, "GET", "/api/v1/me/coupons", ts.user(t, 7), nil).decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("user 7 holds %+v", page.Items)
	}
	c := page.Items[0]
	if len(c.Code) != 2+quan.CodeLength || !strings.HasPrefix(c.Code, "Q7") {
		t.Fatalf("coupon code %q: want Q7 and %d symbols", c.Code, quan.CodeLength)
	}
	byCode := func(token, code string) response {
		t.Helper()
		return ts.do(t, "GET", "/api/v1/coupons/by-code/"+code, token, nil)
	}

	t.Run("OK", func(t *testing.T) {
		typed := strings.ToLower(c.Code[:6] + "-" + c.Code[6:12] + "-" + c.Code[12:])
		for _, tc := range []struct{ who, token, code string }{
			{"merchant", m, c.Code},
			{"merchant, as typed", m, typed},
			{"admin", ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"}), c.Code},
		} {
			r := byCode(tc.token, tc.code)
			r.want(t, http.StatusOK, "")
			var got quan.Coupon
			r.decode(t, &got)
			if got.ID != c.ID || got.Code != c.Code || got.UserID != 7 || got.Status != quan.CouponAvailable {
				t.Errorf("%s, %s: %+v, want coupon %d of user 7, code %s", tc.who, tc.code, got, c.ID, c.Code)
			}
		}
		// The code is the coupon's every time it is read.
		ts.do(t, "GET", "/api/v1/me/coupons", ts.user(t, 7), nil).decode(t, &page)
		if page.Items[0].Code != c.Code {
			t.Errorf("the coupon reads with code %s, then %s", c.Code, page.Items[0].Code)
		}
	})

	t.Run("MistypedCodeIsInvalid", func(t *testing.T) {
		i := 6
		sym := byte('2')
		if c.Code[i] == sym {
			sym = '3'
		}
		typo := c.Code[:i] + string(sym) + c.Code[i+1:]
		r := byCode(m, typo)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !strings.Contains(r.Problem.Detail, "check symbol") {
			t.Errorf("problem %q does not name the check symbol", r.Problem.Detail)
		}
		byCode(m, "Q7ABC").want(t, http.StatusBadRequest, quan.EINVALID)
	})

	t.Run("MadeUpCodeIsNotFound", func(t *testing.T) {
		for _, code := range []string{
			withCheck(t, "Q723"+strings.Repeat("X", 13)),   // as codes look
			withCheck(t, "Q7"+strings.Repeat("Z", 15)),     // beyond 64 bits
			withCheck(t, c.Code[2:len(c.Code)-1]),          // the coupon's, without its prefix
			withCheck(t, "Q8"+c.Code[2:len(c.Code)-1]),     // with another prefix
			withCheck(t, "Q7"+strings.Repeat("2", 14)+"3"), // a small value, of a random id
			withCheck(t, c.Code[:len(c.Code)-2]+"Z"),       // a neighbour of the coupon's
		} {
			if code == c.Code {
				continue
			}
			byCode(m, code).want(t, http.StatusNotFound, quan.ENOTFOUND)
		}
	})

	t.Run("OtherShopOrUser", func(t *testing.T) {
		byCode(ts.merchant(t, 2), c.Code).want(t, http.StatusNotFound, quan.ENOTFOUND)
		byCode(ts.user(t, 7), c.Code).want(t, http.StatusForbidden, quan.EFORBIDDEN)
		byCode("", c.Code).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	})
}
