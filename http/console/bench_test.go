package console_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/http/console"
	"github.com/quanhq/quan/templates"
)

// BenchmarkTemplateList renders the template list of a shop holding
// 10,000 templates, as a merchant's browser asks for it, through the
// whole server (session, store, template): the first page, the last, a
// name search and a status filter. Its ns/op is the server time of a page.
func BenchmarkTemplateList(b *testing.B) {
	tc := startConsole(b, func(*testConsole, *console.Console) {})
	ctx := context.Background()
	who := quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001}
	start := time.Now()
	for i := range 10_000 {
		tpl, err := tc.tpls.Create(ctx, who, templates.NewTemplate{
			TemplateSpec: quan.TemplateSpec{
				Name: fmt.Sprintf("券 %05d", i), Kind: quan.KindThreshold, Rule: quan.Rule{Amount: 1000, Threshold: 10000},
				Source: quan.SourceShop, Scope: quan.Scope{Kind: quan.ScopeAll},
				IssueStart: testNow.Add(-time.Hour), IssueEnd: testNow.Add(30 * 24 * time.Hour),
				Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 72}, PerUserLimit: 1,
			},
			Stock: 500,
		})
		if err != nil {
			b.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := tc.tpls.Activate(ctx, who, tpl.ID); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Logf("10,000 templates stored in %s", time.Since(start).Round(time.Millisecond))
	br := tc.signedIn(b, "m1001")
	for _, page := range []struct{ name, path string }{
		{"first", "/console/templates"},
		{"last", "/console/templates?page=200"},
		{"search", "/console/templates?q=" + "券%200999"},
		{"active", "/console/templates?status=active&page=10"},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := br.http.Get(tc.URL + page.path)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", page.path, resp.StatusCode)
				}
			}
		})
	}
}
