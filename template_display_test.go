package quan_test

import (
	"testing"

	"github.com/quanhq/quan"
)

func TestRuleText(t *testing.T) {
	for _, c := range []struct {
		kind   quan.Kind
		rule   quan.Rule
		zh, en string
	}{
		{quan.KindDirect, quan.Rule{Amount: 1000}, "立减10元", "¥10 off"},
		{quan.KindDirect, quan.Rule{Amount: 990}, "立减9.9元", "¥9.9 off"},
		{quan.KindThreshold, quan.Rule{Amount: 1000, Threshold: 10000}, "满100减10", "¥10 off ¥100"},
		{quan.KindThreshold, quan.Rule{Amount: 505, Threshold: 9950}, "满99.5减5.05", "¥5.05 off ¥99.5"},
		{quan.KindDiscount, quan.Rule{Rate: 85}, "8.5折", "15% off"},
		{quan.KindDiscount, quan.Rule{Rate: 80, Threshold: 10000, Cap: 2000}, "满100享8折，最高减20元", "20% off ¥100, up to ¥20 off"},
		{quan.KindDiscount, quan.Rule{Rate: 5}, "0.5折", "95% off"},
		{quan.KindStep, quan.Rule{Amount: 1000, Step: 10000, Cap: 5000}, "每满100减10，最高减50元", "¥10 off every ¥100, up to ¥50 off"},
		{quan.KindComposite, quan.Rule{Amount: 1000, Threshold: 10000, Rate: 85}, "满100减10再享8.5折", "¥10 off ¥100, then 15% off"},
		{quan.KindComposite, quan.Rule{Amount: 1000, Threshold: 10000, Rate: 90, Cap: 3000}, "满100减10再享9折，最高减30元", "¥10 off ¥100, then 10% off, up to ¥30 off"},
	} {
		if got := quan.RuleText(c.kind, c.rule); got != (quan.BiText{ZH: c.zh, EN: c.en}) {
			t.Errorf("RuleText(%s, %+v) = %+v, want %q / %q", c.kind, c.rule, got, c.zh, c.en)
		}
	}
}

func TestScopeText(t *testing.T) {
	for _, c := range []struct {
		scope  quan.Scope
		zh, en string
	}{
		{quan.Scope{Kind: quan.ScopeAll}, "全场通用", "All goods"},
		{quan.Scope{Kind: quan.ScopeGoods, IDs: []string{"a"}}, "限指定商品（1种）", "1 selected item"},
		{quan.Scope{Kind: quan.ScopeCategories, IDs: []string{"a", "b"}}, "限指定品类（2个）", "2 selected categories"},
	} {
		if got := quan.ScopeText(c.scope); got != (quan.BiText{ZH: c.zh, EN: c.en}) {
			t.Errorf("ScopeText(%+v) = %+v, want %q / %q", c.scope, got, c.zh, c.en)
		}
	}
}

// TestPublicOfHidesTheStock: the public view says whether stock is left,
// never how much, and nothing of the budget or the rules.
func TestPublicOfHidesTheStock(t *testing.T) {
	tpl := &quan.Template{ID: 3, ShopNo: 1, Stock: 0, TotalStock: 10, Status: quan.TemplateActive,
		TemplateSpec: quan.TemplateSpec{Name: "x", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 100}, Budget: 5, Eligibility: "true"}}
	if p := quan.PublicOf(tpl); p.InStock || p.ID != 3 || p.RuleText.ZH != "立减1元" {
		t.Errorf("PublicOf(sold out) = %+v", p)
	}
	tpl.Stock = 1
	if p := quan.PublicOf(tpl); !p.InStock {
		t.Errorf("PublicOf(in stock) = %+v", p)
	}
}
