package http_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/quanhq/quan"
)

func shopSettingsPath(shop int64) string { return fmt.Sprintf("/api/v1/shops/%d/settings", shop) }

// TestShopSettings: a merchant reads and sets its own shop's settings, not
// another's; an admin any shop's; bad settings are 400 naming the field.
func TestShopSettings(t *testing.T) {
	ts := newTestServer(t)
	m1, m2 := ts.merchant(t, 1), ts.merchant(t, 2)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})

	var got quan.ShopSettings
	r := ts.do(t, "GET", shopSettingsPath(1), m1, nil)
	r.want(t, http.StatusOK, "")
	r.decode(t, &got)
	if got != (quan.ShopSettings{ShopNo: 1}) {
		t.Errorf("settings never set: %+v, want zero settings of shop 1", got)
	}

	r = ts.do(t, "PUT", shopSettingsPath(1), m1, map[string]any{"dailyClaimCap": 500})
	r.want(t, http.StatusOK, "")
	r.decode(t, &got)
	if got.ShopNo != 1 || got.DailyClaimCap != 500 || got.UpdatedBy != "merchant:1" || got.UpdatedAt.IsZero() {
		t.Errorf("settings put: %+v", got)
	}
	for _, tok := range []string{m1, admin} {
		var again quan.ShopSettings
		r := ts.do(t, "GET", shopSettingsPath(1), tok, nil)
		r.want(t, http.StatusOK, "")
		r.decode(t, &again)
		if again != got {
			t.Errorf("settings read back: %+v, want %+v", again, got)
		}
	}
	ts.do(t, "PUT", shopSettingsPath(1), m1, map[string]any{"shopNo": 1, "dailyClaimCap": 0}).want(t, http.StatusOK, "")
	ts.do(t, "PUT", shopSettingsPath(2), admin, map[string]any{"dailyClaimCap": 3}).want(t, http.StatusOK, "")

	// Another shop's: 403, as with its statistics.
	ts.do(t, "GET", shopSettingsPath(2), m1, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "PUT", shopSettingsPath(1), m2, map[string]any{"dailyClaimCap": 1}).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "PUT", shopSettingsPath(1), ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 1}), map[string]any{"dailyClaimCap": 1}).
		want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "GET", shopSettingsPath(1), "", nil).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	ts.do(t, "GET", "/api/v1/shops/x/settings", admin, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", "/api/v1/shops/0/settings", admin, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)

	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"Negative", map[string]any{"dailyClaimCap": -1}, "dailyClaimCap"},
		{"TooLarge", map[string]any{"dailyClaimCap": quan.MaxDailyClaimCap + 1}, "dailyClaimCap"},
		{"Missing", map[string]any{}, "dailyClaimCap"},
		{"OtherShop", map[string]any{"shopNo": 2, "dailyClaimCap": 1}, "shopNo"},
		{"NotANumber", map[string]any{"dailyClaimCap": "many"}, "dailyClaimCap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, "PUT", shopSettingsPath(1), m1, tc.body)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if !r.hasField(tc.field) {
				t.Errorf("no field %q in %s", tc.field, r.Body)
			}
		})
	}
	ts.do(t, "PUT", shopSettingsPath(1), m1, map[string]any{"dailyClaimCap": 1, "updatedBy": "me"}).want(t, http.StatusBadRequest, quan.EINVALID)
	r = ts.do(t, "GET", shopSettingsPath(1), m1, nil)
	r.decode(t, &got)
	if got.DailyClaimCap != 0 || got.UpdatedBy != "merchant:1" {
		t.Errorf("refused puts changed the settings: %+v", got)
	}
}

// TestClaimShopDailyCap: over the shop's cap a claim is 409
// shop_daily_cap, whichever of the shop's templates it names; another
// shop's claims go on.
func TestClaimShopDailyCap(t *testing.T) {
	ts := newClaimServer(t, func(ts *testServer) { ts.claims.Shops = ts.api.Shops })
	m1 := ts.merchant(t, 1)
	a := ts.activeTemplate(t, m1, 10, 1)
	b := ts.activeTemplate(t, m1, 10, 1)
	other := ts.activeTemplate(t, ts.merchant(t, 2), 10, 1)
	ts.do(t, "PUT", shopSettingsPath(1), m1, map[string]any{"dailyClaimCap": 2}).want(t, http.StatusOK, "")

	ts.claim(t, ts.user(t, 1), a.ID).want(t, http.StatusAccepted, "")
	ts.claim(t, ts.user(t, 1), b.ID).want(t, http.StatusAccepted, "")
	ts.claim(t, ts.user(t, 2), b.ID).want(t, http.StatusConflict, quan.ESHOPDAILYCAP)
	ts.claim(t, ts.user(t, 3), a.ID).want(t, http.StatusConflict, quan.ESHOPDAILYCAP)
	ts.claim(t, ts.user(t, 2), other.ID).want(t, http.StatusAccepted, "")
}
