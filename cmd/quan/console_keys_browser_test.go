package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
)

// TestConsoleBrowserKeys: an admin makes a service key on the console's
// keys page, sees it once, the key settles through the API; revoked on
// the page, the API refuses it; a merchant has no keys page.
func TestConsoleBrowserKeys(t *testing.T) {
	b := newBrowser(t, 1280, 800) // first: it skips without a browser
	site := startConsole(t)
	b.base = site.URL
	const pw = "pw-root-correct-horse"
	if _, err := site.App.Accounts.Add(t.Context(), admin, accounts.NewAccount{Name: "root", Role: quan.RoleAdmin, Password: pw}); err != nil {
		t.Fatal(err)
	}
	pwShop := site.addMerchant(t, "shop1001", 1001)

	b.signIn("root", pw)
	b.do("make a key on the keys page",
		chromedp.Click(css(`nav a[href="/console/keys"], a[href="/console/keys"]`)),
		chromedp.WaitVisible(css(`#key-form`)),
		chromedp.SendKeys(css(`#key-form [name="name"]`), "订单系统 orders"),
		chromedp.Click(css(`#key-form input[name="scopes"][value="settlement"]`)),
		chromedp.Click(css(`#key-form button[type="submit"]`)),
		chromedp.WaitVisible(css(`#key-secret`)),
	)
	secret := eval[string](b, "read the key", `document.querySelector("#key-secret").textContent`)
	if !strings.HasPrefix(secret, "qk_") {
		t.Fatalf("the page shows the key %q", secret)
	}
	row := eval[string](b, "read the list", `document.querySelector("#key-list tbody").textContent`)
	if !strings.Contains(row, "订单系统 orders") || !strings.Contains(row, "settlement") || strings.Contains(row, secret) {
		t.Errorf("the list shows %q", row)
	}

	release := func() int {
		t.Helper()
		req, err := http.NewRequest("POST", site.URL+"/api/v1/orders/K1/release", bytes.NewReader([]byte(`{"userId":42}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := release(); got != http.StatusOK {
		t.Fatalf("the key settles: %d, want 200", got)
	}

	b.do("revoke it",
		chromedp.Navigate(b.base+"/console/keys"),
		chromedp.WaitVisible(css(`#key-list form[action$="/revoke"] button`)),
		chromedp.Click(css(`#key-list form[action$="/revoke"] button`)),
		chromedp.WaitVisible(css(`#key-list .status-ended`)),
	)
	if eval[bool](b, "look for the key again", `document.querySelector("#key-secret") !== null`) {
		t.Error("the key is shown again after it was made")
	}
	if got := release(); got != http.StatusUnauthorized {
		t.Errorf("a revoked key: %d, want 401", got)
	}

	m := b.fresh(1280, 800)
	m.signIn("shop1001", pwShop)
	if m.eval(`document.querySelector('a[href="/console/keys"]') !== null`) {
		t.Error("a merchant sees the keys link")
	}
	m.do("open the keys page as a merchant", chromedp.Navigate(m.base+"/console/keys"), chromedp.WaitVisible(css(`p.error`)))
	if m.eval(`document.querySelector("#key-form") !== null`) {
		t.Error("a merchant gets the keys form")
	}
}

func (b *browser) eval(js string) bool { return eval[bool](b, js, js) }
