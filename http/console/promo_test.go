package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

// TestPromoCodeForm: an operator gives a template a promo code (口令券)
// in the form; it is kept upper-case, shown on the template's page and
// again in the edit form, and a bad one is shown by its input.
func TestPromoCodeForm(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	_, _, body := b.get("/console/templates/new")
	contains(t, body, `<input id="promoCode" name="promoCode" value=""`)
	form := templateForm()
	form.Set("promoCode", "双十一")
	status, _, body := b.post("/console/templates", form)
	if status != http.StatusBadRequest {
		t.Fatalf("promo code 双十一: %d\n%s", status, body)
	}
	contains(t, body, `<span id="promoCode-err"><span class="field-error" role="alert">`, `value="双十一"`)

	form.Set("promoCode", " double11 ")
	status, path, body := b.post("/console/templates", form)
	if status != http.StatusOK || !strings.HasPrefix(path, "/console/templates/") {
		t.Fatalf("create: %d at %s\n%s", status, path, body)
	}
	contains(t, body, `<code id="tpl-promo">DOUBLE11</code>`)
	items, _, err := tc.tpls.List(context.Background(), quan.Identity{Role: quan.RoleAdmin}, quan.TemplateFilter{})
	if err != nil || len(items) != 1 || items[0].PromoCode != "DOUBLE11" {
		t.Fatalf("templates %v (%v), want one with promo code DOUBLE11", items, err)
	}
	page, _, _ := strings.Cut(path, "?")
	_, _, body = b.get(page + "/edit")
	contains(t, body, `<input id="promoCode" name="promoCode" value="DOUBLE11"`)
}
