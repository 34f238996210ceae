package templates_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/facts"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/rules"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/templates"
	"github.com/quanhq/quan/wallet"
)

// rulesFixture is a store, a template service that checks and versions
// rules, and a book reading them, on a clock the test moves.
type rulesFixture struct {
	st   *sqlite.Store
	tpls *templates.Service
	book *templates.RuleBook
	now  time.Time
}

var rulesT0 = time.Date(2030, 5, 1, 8, 0, 0, 0, time.UTC)

func newRulesFixture(tb testing.TB) *rulesFixture {
	tb.Helper()
	engine, err := rules.New(rules.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	f := &rulesFixture{st: testrig.Store(tb), now: rulesT0}
	f.book = &templates.RuleBook{Engine: engine, Templates: f.st, Versions: f.st}
	f.tpls = &templates.Service{Store: f.st, Now: func() time.Time { return f.now }, Rules: engine, Versions: f.st, Book: f.book}
	return f
}

var rulesMerchant = quan.Identity{Role: quan.RoleMerchant, ShopNo: 1}

// active creates and activates a template of shop 1 with the rules.
func (f *rulesFixture) active(tb testing.TB, eligibility, applies string) *quan.Template {
	tb.Helper()
	t, err := f.tpls.Create(context.Background(), rulesMerchant, templates.NewTemplate{Stock: 1000, TemplateSpec: quan.TemplateSpec{
		Name: "rules", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 100}, Source: quan.SourceShop,
		Scope: quan.Scope{Kind: quan.ScopeAll}, IssueStart: rulesT0.Add(-time.Hour), IssueEnd: rulesT0.Add(30 * 24 * time.Hour),
		Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 24 * 30}, PerUserLimit: 5,
		Eligibility: eligibility, Applies: applies}})
	if err != nil {
		tb.Fatal(err)
	}
	if t, err = f.tpls.Activate(context.Background(), rulesMerchant, t.ID); err != nil {
		tb.Fatal(err)
	}
	return t
}

func (f *rulesFixture) change(tb testing.TB, id int64, in templates.RulesChange) *quan.RulesVersion {
	tb.Helper()
	v, err := f.tpls.ChangeRules(context.Background(), rulesMerchant, id, in)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// TestRuleBookVersions: the book serves the eligibility rule in force at
// a time and, for a coupon, the applies rule of the version it was issued
// under, or of a later one in force that applies to issued coupons.
func TestRuleBookVersions(t *testing.T) {
	f := newRulesFixture(t)
	tpl := f.active(t, "user.level >= 1", "order.total >= 100")
	f.now = rulesT0.Add(time.Minute)
	f.change(t, tpl.ID, templates.RulesChange{Applies: ptr("order.total >= 200")}) // v1 now, keeps eligibility
	v2 := f.change(t, tpl.ID, templates.RulesChange{Eligibility: ptr(""), Applies: ptr("order.total >= 300"),
		ApplyToIssued: true, EffectiveAt: rulesT0.Add(time.Hour)})
	_, err := f.tpls.ChangeRules(context.Background(), rulesMerchant, tpl.ID, templates.RulesChange{EffectiveAt: rulesT0.Add(30 * time.Minute)})
	if quan.ErrorCode(err) != quan.EINVALID {
		t.Errorf("a version in force before the latest: %v, want EINVALID", err)
	}

	tr, err := f.book.Rules(t.Context(), tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(r quan.CompiledRule, user *quan.UserFacts, total int64) string {
		if r == nil {
			return "none"
		}
		ok, err := r.Eval(user, &quan.OrderFacts{Total: total}, rulesT0)
		if err != nil {
			return "error"
		}
		return fmt.Sprint(ok)
	}
	member := &quan.UserFacts{UserID: 1, Level: 1}
	for _, c := range []struct {
		at   time.Time
		want int64
		elig string
	}{
		{rulesT0, 0, "true"},
		{rulesT0.Add(time.Minute), 1, "true"},
		{rulesT0.Add(59 * time.Minute), 1, "true"},
		{v2.EffectiveAt, 2, "none"}, // in force from its time on, not before
	} {
		r, v := tr.Eligibility(c.at)
		if v != c.want || decide(r, member, 0) != c.elig {
			t.Errorf("eligibility at %v: version %d (%s), want %d (%s)", c.at, v, decide(r, member, 0), c.want, c.elig)
		}
	}
	for _, c := range []struct {
		name        string
		issued, now time.Time
		want        int64
	}{
		{"IssuedUnderV0KeepsIt", rulesT0, rulesT0.Add(30 * time.Minute), 0},
		{"IssuedUnderV1", rulesT0.Add(2 * time.Minute), rulesT0.Add(30 * time.Minute), 1},
		{"V2NotYetInForce", rulesT0, v2.EffectiveAt.Add(-time.Microsecond), 0},
		{"V2GovernsIssuedOnceInForce", rulesT0, v2.EffectiveAt, 2},
		{"V2GovernsV1sToo", rulesT0.Add(2 * time.Minute), v2.EffectiveAt.Add(time.Hour), 2},
	} {
		r, v := tr.Applies(c.issued, c.now)
		if v != c.want {
			t.Errorf("%s: applies of version %d, want %d", c.name, v, c.want)
		}
		want := map[int64]string{0: "order.total >= 100", 1: "order.total >= 200", 2: "order.total >= 300"}[c.want]
		if r == nil || r.Source() != want {
			t.Errorf("%s: rule %v, want %q", c.name, r, want)
		}
	}

	// Drafts are edited, ended templates are done with.
	draft, err := f.tpls.Create(context.Background(), rulesMerchant, templates.NewTemplate{Stock: 1, TemplateSpec: tpl.TemplateSpec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.tpls.ChangeRules(context.Background(), rulesMerchant, draft.ID, templates.RulesChange{}); !errors.Is(err, quan.ErrTransition) {
		t.Errorf("rules of a draft: %v, want ErrTransition", err)
	}
	if _, err := f.book.Rules(t.Context(), 999); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("rules of no template: %v, want ErrNotFound", err)
	}
	// A template without rules has none: nil, and nothing in force.
	plain := f.active(t, "", "")
	if tr, err := f.book.Rules(t.Context(), plain.ID); err != nil || tr != nil {
		t.Errorf("rules of a template without: %v, %v", tr, err)
	}
}

// TestOrderFactsOf: an order's facts, its shop only when it has one.
func TestOrderFactsOf(t *testing.T) {
	items := []quan.OrderItem{{SKU: "a", Category: "wear", ShopNo: 1, UnitPrice: 100, Quantity: 2},
		{SKU: "b", Category: "books", ShopNo: 1, UnitPrice: 50, Quantity: 1},
		{SKU: "c", Category: "wear", ShopNo: 1, UnitPrice: 10, Quantity: 1}}
	o := wallet.OrderFactsOf(items, "app", rulesT0)
	if o.Total != 260 || o.Shop != 1 || o.Channel != "app" || !slices.Equal(o.Categories, []string{"wear", "books"}) ||
		len(o.Items) != 3 || o.Items[0] != (quan.OrderItemFacts{GoodsID: "a", CategoryID: "wear", Price: 100, Qty: 2}) {
		t.Fatalf("facts %+v", o)
	}
	items[2].ShopNo = 2
	if o := wallet.OrderFactsOf(items, "", rulesT0); o.Shop != 0 {
		t.Errorf("an order across shops has shop %d, want 0", o.Shop)
	}
}

// BenchmarkQuoteRules quotes an order of 20 items against the 50
// coupons a user holds, of 50 templates each with an applies rule (and
// half with an eligibility rule, which a quote does not read), on SQLite:
// the whole wallet.Service.Quote, the store's read of the coupons
// included. It reports the p99 of a quote beside ns/op.
func BenchmarkQuoteRules(b *testing.B) {
	f := newRulesFixture(b)
	ctx := context.Background()
	const user = 7
	applies := []string{
		`order.total >= 5000 && order.items.exists(i, i.categoryId == "wear")`,
		`order.channel == "app" && order.categories.exists(c, c == "books")`,
		`order.hour >= 0 && order.items.all(i, i.price > 0)`,
		`user.level >= 2 && order.total >= 1000`,
		`order.items.filter(i, i.categoryId == "wear").size() >= 2`,
	}
	var claims []*quan.Claim
	for i := range 50 {
		elig := ""
		if i%2 == 0 {
			elig = `user.level >= 2 && "vip" in user.tags`
		}
		tpl := f.active(b, elig, applies[i%len(applies)])
		claims = append(claims, &quan.Claim{ID: quan.NewClaimID(tpl.ID, user), TemplateID: tpl.ID, UserID: user,
			Status: quan.ClaimPending, At: f.now})
	}
	if _, err := f.st.IssueClaims(ctx, claims, f.now); err != nil {
		b.Fatal(err)
	}
	attrs := &facts.Service{Store: f.st, Now: func() time.Time { return f.now }}
	if _, err := attrs.Put(ctx, quan.Identity{Role: quan.RoleAdmin, Subject: "bench"},
		quan.UserFacts{UserID: user, Level: 3, Tags: []string{"vip"}}); err != nil {
		b.Fatal(err)
	}
	w := &wallet.Service{Coupons: f.st, Templates: f.st, Now: func() time.Time { return f.now }, Rules: f.book, Facts: attrs}
	var items []quan.OrderItem
	for i := range 20 {
		cat := []string{"wear", "books", "food", "toys"}[i%4]
		items = append(items, quan.OrderItem{SKU: fmt.Sprintf("sku-%d", i), Category: cat, ShopNo: 1, UnitPrice: 1000 + int64(i)*100, Quantity: 1})
	}
	who := quan.Identity{Role: quan.RoleUser, UserID: user}
	q, err := w.Quote(ctx, who, items, "")
	if err != nil {
		b.Fatal(err)
	}
	usable := 0
	for _, cq := range q.Coupons {
		if cq.Usable {
			usable++
		} else if cq.Reason != quan.ReasonRuleNotMet {
			b.Fatalf("coupon %d not usable for %s", cq.CouponID, cq.Reason)
		}
	}
	if len(q.Coupons) != 50 || usable == 0 || usable == 50 {
		b.Fatalf("quote of %d coupons, %d usable: want 50, some not by their rule", len(q.Coupons), usable)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := w.Quote(ctx, who, items, ""); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
