package rules_test

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/rules"
)

// The rule of `quan bench claim`'s eligibility run, and an applies rule of
// the kind a quote evaluates for each of its coupons.
const (
	benchEligibility = `user.level >= 2 && "vip" in user.tags`
	benchApplies     = `order.total >= 10000 && order.channel == "app" && ` +
		`order.items.exists(i, i.categoryId == "books") && order.hour >= 18`
)

// BenchmarkEvalEligibility is the rule through Eval, which decides it by
// its filter (the rule is exact).
func BenchmarkEvalEligibility(b *testing.B) {
	benchEligible(b, func(r quan.CompiledRule, u *quan.UserFacts, now time.Time) (bool, error) { return r.Eval(u, nil, now) },
		[]string{"new", "student", "vip"})
}

// BenchmarkEvalEligibilityCEL is the same rule by its CEL program: what
// a rule of the same size that is not exact costs.
func BenchmarkEvalEligibilityCEL(b *testing.B) {
	benchEligible(b, rules.EvalCEL, []string{"new", "student", "vip"})
}

// BenchmarkEvalEligibilityGuarded is the CEL program on a user with more
// tags than rules are priced for, which runs under CEL's runtime cost
// tracking.
func BenchmarkEvalEligibilityGuarded(b *testing.B) {
	benchEligible(b, rules.EvalCEL, append(make([]string, rules.SizeTags), "vip"))
}

func benchEligible(b *testing.B, eval func(quan.CompiledRule, *quan.UserFacts, time.Time) (bool, error), tags []string) {
	r := mustCompile(b, quan.RuleEligibility, benchEligibility)
	if !r.Filter().Exact {
		b.Fatalf("%q is not exact", benchEligibility)
	}
	u := &quan.UserFacts{UserID: 42, Level: 3, Tags: tags, Region: "sh", Orders: 7}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := eval(r, u, now); err != nil || !ok {
			b.Fatalf("Eval = %v, %v; want true", ok, err)
		}
	}
}

func BenchmarkEvalApplies(b *testing.B) {
	r := mustCompile(b, quan.RuleApplies, benchApplies)
	u := &quan.UserFacts{UserID: 42, Level: 3, Tags: []string{"vip"}}
	o := &quan.OrderFacts{
		Shop: 7, Channel: "app", Total: 25900,
		Items: []quan.OrderItemFacts{
			{GoodsID: "g1", CategoryID: "food", Price: 1200, Qty: 2},
			{GoodsID: "g2", CategoryID: "toys", Price: 8500, Qty: 1},
			{GoodsID: "g3", CategoryID: "books", Price: 5000, Qty: 3},
		},
		Categories: []string{"food", "toys", "books"},
		At:         time.Date(2026, 5, 1, 20, 30, 0, 0, shanghai),
	}
	now := o.At
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := r.Eval(u, o, now); err != nil || !ok {
			b.Fatalf("Eval = %v, %v; want true", ok, err)
		}
	}
}

func mustCompile(tb testing.TB, kind quan.RuleKind, expr string) quan.CompiledRule {
	tb.Helper()
	e, err := rules.New(rules.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := e.Compile(kind, expr)
	if err != nil {
		tb.Fatalf("Compile(%s, %q): %v", kind, expr, err)
	}
	return r
}

var shanghai = time.FixedZone("CST", 8*60*60)
