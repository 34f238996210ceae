package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
)

// settlementSteps are the routes that change settlement state.
var settlementSteps = []string{"lock", "redeem", "release", "refund"}

// TestShopperNeverSettles: a shopper's token on every settlement route,
// and on a counter's redemption, is 403, whatever the body says; so are
// a merchant's and an admin's. The coupon stays available.
func TestShopperNeverSettles(t *testing.T) {
	ts := newTestServer(t)
	c := ts.walletCoupon(t, 7)
	body := map[string]any{"userId": 7, "items": order(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	for name, token := range map[string]string{
		"Shopper":  ts.user(t, 7),
		"Merchant": ts.merchant(t, 1),
		"Admin":    ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"}),
	} {
		for _, step := range settlementSteps {
			t.Run(name+"/"+step, func(t *testing.T) {
				ts.do(t, "POST", "/api/v1/orders/A1/"+step, token, body).want(t, http.StatusForbidden, quan.EFORBIDDEN)
			})
		}
		t.Run(name+"/RedeemByCode", func(t *testing.T) {
			ts.do(t, "POST", "/api/v1/coupons/by-code/"+c.Code+"/redeem", token,
				map[string]any{"orderId": "P1", "items": order(12_000)}).want(t, http.StatusForbidden, quan.EFORBIDDEN)
		})
	}
	var got quan.Coupon
	ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", c.ID), ts.user(t, 7), nil).decode(t, &got)
	if got.Status != quan.CouponAvailable {
		t.Errorf("coupon after the refused settlements: %s, want available", got.Status)
	}
}

// TestOneCouponForeverRefused is the scenario: lock A1, redeem,
// refund, and again. The shopper's token settles nothing; the order
// system's key refunds A1 once, and the coupon given back is spent again
// only through a new order.
func TestOneCouponForeverRefused(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	c := ts.walletCoupon(t, 7)
	lock := map[string]any{"items": order(12_000), "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	ts.do(t, "POST", "/api/v1/orders/A1/lock", u, lock).want(t, http.StatusForbidden, quan.EFORBIDDEN)

	ts.settle(t, u, "/api/v1/orders/A1/lock", lock).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/A1/redeem", nil).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/A1/refund", nil).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/A1/refund", nil).want(t, http.StatusConflict, quan.EREFUNDED)
	ts.settle(t, u, "/api/v1/orders/A1/lock", lock).want(t, http.StatusConflict, quan.EREFUNDED)
	ts.settle(t, u, "/api/v1/orders/A1/redeem", nil).want(t, http.StatusConflict, quan.EREFUNDED)

	// A new order spends the coupon given back, and refunds once too.
	ts.settle(t, u, "/api/v1/orders/A2/lock", lock).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/A2/redeem", nil).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/A2/refund", nil).want(t, http.StatusOK, "")
	ts.settle(t, u, "/api/v1/orders/A2/refund", nil).want(t, http.StatusConflict, quan.EREFUNDED)

	// An order never paid refunds nothing, and stays open.
	ts.settle(t, u, "/api/v1/orders/A3/refund", nil).want(t, http.StatusConflict, quan.ETRANSITION)
	ts.settle(t, u, "/api/v1/orders/A3/lock", lock).want(t, http.StatusOK, "")
}

// TestSettlementKeys: what a key may settle is its scope's and its
// shop's; a body without userId is 400 naming it.
func TestSettlementKeys(t *testing.T) {
	ts := newTestServer(t)
	c1 := ts.shopCoupon(t, 1, 7) // shop 1's
	c2 := ts.shopCoupon(t, 2, 7) // shop 2's
	lockOf := func(c quan.Coupon, shop int64) map[string]any {
		items := []map[string]any{{"sku": "shoe", "category": "wear", "shopNo": shop, "unitPrice": 12_000, "quantity": 1}}
		return map[string]any{"userId": 7, "items": items, "couponIds": []int64{c.ID}, "expectedDiscount": 1000}
	}
	shop1 := ts.key(t, "shop 1 orders", 1, quan.ScopeSettlement)
	t.Run("ShopKeyOnAnotherShopsCoupon", func(t *testing.T) {
		ts.do(t, "POST", "/api/v1/orders/B1/lock", shop1, lockOf(c2, 2)).want(t, http.StatusNotFound, quan.ENOTFOUND)
	})
	t.Run("ShopKeyOnItsOwn", func(t *testing.T) {
		ts.do(t, "POST", "/api/v1/orders/B2/lock", shop1, lockOf(c1, 1)).want(t, http.StatusOK, "")
	})
	t.Run("ShopKeyOnAnotherShopsOrder", func(t *testing.T) {
		platform := ts.orderKey
		ts.do(t, "POST", "/api/v1/orders/B3/lock", platform, lockOf(c2, 2)).want(t, http.StatusOK, "")
		for _, step := range []string{"redeem", "release", "refund"} {
			ts.do(t, "POST", "/api/v1/orders/B3/"+step, shop1, map[string]any{"userId": 7}).want(t, http.StatusNotFound, quan.ENOTFOUND)
		}
		ts.do(t, "POST", "/api/v1/orders/B3/release", platform, map[string]any{"userId": 7}).want(t, http.StatusOK, "")
	})
	t.Run("CouponsReadKeyOnRedeem", func(t *testing.T) {
		read := ts.key(t, "lookup", 1, quan.ScopeCouponsRead)
		for _, step := range settlementSteps {
			r := ts.do(t, "POST", "/api/v1/orders/B4/"+step, read, map[string]any{"userId": 7})
			r.want(t, http.StatusForbidden, quan.EFORBIDDEN)
			if !strings.Contains(r.Problem.Detail, "settlement") {
				t.Errorf("%s: %q does not name the scope it lacks", step, r.Problem.Detail)
			}
		}
		ts.do(t, "POST", "/api/v1/coupons/by-code/"+c1.Code+"/redeem", read,
			map[string]any{"orderId": "P1", "items": order(12_000)}).want(t, http.StatusForbidden, quan.EFORBIDDEN)
		ts.do(t, "GET", "/api/v1/coupons/by-code/"+c1.Code, read, nil).want(t, http.StatusOK, "")
		ts.do(t, "GET", "/api/v1/coupons/by-code/"+c2.Code, read, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	})
	t.Run("NoUserID", func(t *testing.T) {
		for _, step := range settlementSteps {
			r := ts.do(t, "POST", "/api/v1/orders/B5/"+step, ts.orderKey, map[string]any{})
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if !r.hasField("userId") {
				t.Errorf("%s without userId: %+v, want errors naming userId", step, r.Problem)
			}
		}
	})
	t.Run("KeysDoNotHoldWallets", func(t *testing.T) {
		ts.do(t, "GET", "/api/v1/me/coupons", ts.orderKey, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
		ts.do(t, "POST", "/api/v1/templates", ts.orderKey, validTemplate()).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	})
}

// TestBadKeys: an unknown, mangled or revoked key is 401.
func TestBadKeys(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	var made struct {
		ID  int64  `json:"id"`
		Key string `json:"key"`
	}
	ts.do(t, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "orders 2", "scopes": []string{"settlement"}}).decode(t, &made)
	step := func(key string) response {
		return ts.do(t, "POST", "/api/v1/orders/C1/release", key, map[string]any{"userId": 7})
	}
	step(made.Key).want(t, http.StatusOK, "")
	for _, bad := range []string{"qk_unknown", made.Key[:len(made.Key)-1], made.Key + "A"} {
		step(bad).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	}
	ts.do(t, "POST", fmt.Sprintf("/api/v1/api-keys/%d/revoke", made.ID), admin, nil).want(t, http.StatusOK, "")
	step(made.Key).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
}

// TestKeyRoutesAreAdmins: only an admin makes, lists and revokes keys;
// the secret is in the reply of its making only.
func TestKeyRoutesAreAdmins(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	body := map[string]any{"name": "pos", "shopNo": 3, "scopes": []string{"redeem", "coupons:read"}}
	for name, token := range map[string]string{
		"Merchant": ts.merchant(t, 3), "Shopper": ts.user(t, 7), "Key": ts.key(t, "all", 0, quan.AllScopes()...),
	} {
		t.Run(name, func(t *testing.T) {
			ts.do(t, "POST", "/api/v1/api-keys", token, body).want(t, http.StatusForbidden, quan.EFORBIDDEN)
			ts.do(t, "GET", "/api/v1/api-keys", token, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
			ts.do(t, "POST", "/api/v1/api-keys/1/revoke", token, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
		})
	}
	ts.do(t, "POST", "/api/v1/api-keys", "", body).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	r := ts.do(t, "POST", "/api/v1/api-keys", admin, body)
	r.want(t, http.StatusCreated, "")
	var made struct {
		Key    string   `json:"key"`
		Hint   string   `json:"hint"`
		Scopes []string `json:"scopes"`
		ShopNo int64    `json:"shopNo"`
	}
	r.decode(t, &made)
	if !strings.HasPrefix(made.Key, "qk_") || made.Hint != made.Key[:7] || made.ShopNo != 3 || len(made.Scopes) != 2 {
		t.Errorf("made %+v", made)
	}
	list := ts.do(t, "GET", "/api/v1/api-keys", admin, nil)
	list.want(t, http.StatusOK, "")
	if strings.Contains(string(list.Body), made.Key) || strings.Contains(string(list.Body), `"hash"`) {
		t.Errorf("the list shows a secret: %s", list.Body)
	}
	for field, bad := range map[string]map[string]any{
		"scopes": {"name": "x", "scopes": []string{"admin"}},
		"name":   {"name": "", "scopes": []string{"tasks"}},
		"shopNo": {"name": "x", "shopNo": -1, "scopes": []string{"tasks"}},
	} {
		r := ts.do(t, "POST", "/api/v1/api-keys", admin, bad)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField(field) {
			t.Errorf("%v: %+v, want errors naming %s", bad, r.Problem, field)
		}
	}
	ts.do(t, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "x", "shopNo": 3, "scopes": []string{"claims"}}).
		want(t, http.StatusBadRequest, quan.EINVALID)
	ts.do(t, "POST", "/api/v1/api-keys/999/revoke", admin, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
}

// TestRedeemAtTheCounter: a shop's redeem key spends the coupon a shopper
// shows by its code, priced as settlement prices it; another shop's code
// is 404, a used coupon 409, an order too small 409.
func TestRedeemAtTheCounter(t *testing.T) {
	ts := newTestServer(t)
	c1 := ts.shopCoupon(t, 1, 7)
	c2 := ts.shopCoupon(t, 2, 8)
	pos := ts.key(t, "pos 1", 1, quan.ScopeRedeem)
	redeem := func(code, orderID string, amount int64) response {
		return ts.do(t, "POST", "/api/v1/coupons/by-code/"+code+"/redeem", pos, map[string]any{"orderId": orderID, "items": order(amount)})
	}
	redeem(c2.Code, "P1", 12_000).want(t, http.StatusNotFound, quan.ENOTFOUND)
	redeem(c1.Code, "P1", 9_000).want(t, http.StatusConflict, quan.ENOTUSABLE) // 满100减10 on 90.00
	r := redeem(strings.ToLower(c1.Code), "P2", 12_000)
	r.want(t, http.StatusOK, "")
	var res struct {
		Coupon   quan.Coupon
		Discount int64
		Total    int64
	}
	r.decode(t, &res)
	if res.Coupon.ID != c1.ID || res.Coupon.Status != quan.CouponUsed || res.Discount != 1000 || res.Total != 12_000 || res.Coupon.OrderID != "P2" {
		t.Errorf("redeemed %+v", res)
	}
	redeem(c1.Code, "P3", 12_000).want(t, http.StatusConflict, quan.ENOTUSABLE) // used already
	redeem("NOT-A-CODE", "P4", 12_000).want(t, http.StatusBadRequest, quan.EINVALID)
	// A platform's key has no shop: it redeems at no counter.
	platform := ts.key(t, "pos platform", 0, quan.ScopeRedeem)
	ts.do(t, "POST", "/api/v1/coupons/by-code/"+c2.Code+"/redeem", platform, map[string]any{"orderId": "P5", "items": order(12_000)}).
		want(t, http.StatusForbidden, quan.EFORBIDDEN)
}

// TestPolicyCoversRoutes: every route the server registers has its row
// in the table of who may do what, and the table has no row of a route
// no server registers.
func TestPolicyCoversRoutes(t *testing.T) {
	ts := newClaimServer(t, nil)
	policy := qhttp.Policy()
	served := map[string]bool{}
	for _, r := range ts.api.Routes() {
		served[r] = true
		if _, ok := policy[r]; !ok {
			t.Errorf("route %s has no row in http.Policy", r)
		}
	}
	for r := range policy {
		if !served[r] {
			t.Errorf("http.Policy has a row for %s, which the test server does not serve", r)
		}
	}
}

// TestNoTokenIsAKey: a JWT signed with the server's secret that says it
// is a service key, with every scope, is refused: only a key stored by an
// admin is one.
func TestNoTokenIsAKey(t *testing.T) {
	ts := newTestServer(t)
	forged, err := ts.tokens.Mint(quan.Identity{Role: quan.RoleService, KeyID: 1, Scopes: quan.NewScopeSet(quan.AllScopes()...)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ts.do(t, "POST", "/api/v1/orders/F1/release", forged, map[string]any{"userId": 7}).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
}

// TestClaimByKey: a platform's key with the claims scope claims for the
// user its body names and reads that claim; the user's own token sees
// the coupon; without userId it is 400; a key of another scope is 403;
// a user's token reads no other user's claim.
func TestClaimByKey(t *testing.T) {
	ts := newClaimServer(t, nil)
	tpl := ts.activeTemplate(t, ts.merchant(t, 1), 10, 1)
	path := fmt.Sprintf("/api/v1/templates/%d/claim", tpl.ID)
	platform := ts.key(t, "app server", 0, quan.ScopeClaims)

	ts.do(t, "POST", path, platform, map[string]any{}).want(t, http.StatusBadRequest, quan.EINVALID)
	ts.do(t, "POST", path, ts.orderKey, map[string]any{"userId": 42}).want(t, http.StatusForbidden, quan.EFORBIDDEN)

	r := ts.do(t, "POST", path, platform, map[string]any{"userId": 42})
	r.want(t, http.StatusAccepted, "")
	var c quan.Claim
	r.decode(t, &c)
	if c.UserID != 42 {
		t.Fatalf("claimed for %d, want 42", c.UserID)
	}
	if got := ts.waitClaim(t, platform, c.ID); got.Status != quan.ClaimIssued {
		t.Fatalf("claim by key: %+v", got)
	}
	if got := ts.waitClaim(t, ts.user(t, 42), c.ID); got.Status != quan.ClaimIssued {
		t.Errorf("the user's own view of the claim: %+v", got)
	}
	ts.do(t, "GET", "/api/v1/claims/"+c.ID, ts.user(t, 43), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "POST", path, platform, map[string]any{"userId": 42}).want(t, http.StatusConflict, quan.ELIMIT)
}
