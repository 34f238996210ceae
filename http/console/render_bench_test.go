package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// BenchmarkRenderTemplateRows renders the template list page holding
// 10,000 rows at once, in Chinese: the cost of the HTML alone, should a
// page ever show that many (the list shows 50 a page).
func BenchmarkRenderTemplateRows(b *testing.B) {
	c := &Console{}
	pages, err := parsePages()
	if err != nil {
		b.Fatal(err)
	}
	c.pages = pages
	now := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	items := make([]*quan.Template, 10_000)
	for i := range items {
		items[i] = &quan.Template{ID: int64(i + 1), ShopNo: 1001, Stock: 500, TotalStock: 500, Status: quan.TemplateActive,
			TemplateSpec: quan.TemplateSpec{Name: fmt.Sprintf("券 %05d", i), Kind: quan.KindThreshold,
				Rule: quan.Rule{Amount: 1000, Threshold: 10000}, IssueStart: now, IssueEnd: now.Add(720 * time.Hour)}}
	}
	r := httptest.NewRequest(http.MethodGet, "/console/templates", nil)
	acct := &quan.Account{Name: "m1001", Role: quan.RoleMerchant, ShopNo: 1001}
	s := &session{Session: &quan.Session{CSRF: "token"}, Account: acct, Who: acct.Identity()}
	for b.Loop() {
		w := httptest.NewRecorder()
		d := templateListData{Items: items, Rows: templateRows(c.newView(r, s), items), Total: len(items), Page: 1, Pages: 1}
		c.render(w, r, s, http.StatusOK, "templates", "tpl.title", d)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
