package quan

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of a template's display fields (TemplateSpec.LogoURL …
// Metadata). They keep a template row, and a wallet page that shows a
// hundred of them, small.
const (
	MaxLogoURLLen      = 1024
	MaxCategoryLen     = 64
	MaxGoods           = 50
	MaxGoodsLen        = 64
	MaxInstructionsLen = 2000
	MaxMetadataKeys    = 32
	MaxMetadataKeyLen  = 64
	MaxMetadataBytes   = 4096 // the metadata as JSON
)

func (s *TemplateSpec) validateDisplay(v *Validation) {
	switch {
	case s.LogoURL == "":
	case len(s.LogoURL) > MaxLogoURLLen:
		v.Add("logoUrl", fmt.Sprintf("must be at most %d bytes", MaxLogoURLLen))
	default:
		u, err := url.Parse(s.LogoURL)
		switch {
		case TextProblem(s.LogoURL, "") != "":
			v.Line("logoUrl", s.LogoURL)
		case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			v.Add("logoUrl", "must be an absolute http or https URL, such as https://cdn.example.com/logo.png")
		}
	}
	line := func(field, s string, most int) {
		switch {
		case utf8.RuneCountInString(s) > most:
			v.Add(field, fmt.Sprintf("must be at most %d characters", most))
		default:
			v.Line(field, s)
		}
	}
	line("category", s.Category, MaxCategoryLen)
	if len(s.Goods) > MaxGoods {
		v.Add("goods", fmt.Sprintf("must list at most %d goods or product lines", MaxGoods))
	} else {
		seen := make(map[string]bool, len(s.Goods))
		for i, g := range s.Goods {
			field := fmt.Sprintf("goods[%d]", i)
			switch {
			case strings.TrimSpace(g) == "":
				v.Add(field, "must not be empty")
			case seen[g]:
				v.Add(field, fmt.Sprintf("%q is listed twice", g))
			default:
				line(field, g, MaxGoodsLen)
			}
			seen[g] = true
		}
	}
	if utf8.RuneCountInString(s.Instructions) > MaxInstructionsLen {
		v.Add("instructions", fmt.Sprintf("must be at most %d characters", MaxInstructionsLen))
	} else {
		v.Text("instructions", s.Instructions, "\n\t")
	}
	if len(s.Metadata) > MaxMetadataKeys {
		v.Add("metadata", fmt.Sprintf("must hold at most %d keys", MaxMetadataKeys))
		return
	}
	for k, val := range s.Metadata {
		field := "metadata." + k
		switch {
		case strings.TrimSpace(k) == "":
			v.Add("metadata", "a key must not be empty")
		case utf8.RuneCountInString(k) > MaxMetadataKeyLen:
			v.Add("metadata", fmt.Sprintf("key %.20q… must be at most %d characters", k, MaxMetadataKeyLen))
		case TextProblem(k, "") != "":
			v.Add("metadata", "a key "+TextProblem(k, ""))
		default:
			v.Text(field, val, "\n\t")
		}
	}
	if b, _ := json.Marshal(s.Metadata); len(b) > MaxMetadataBytes {
		v.Add("metadata", fmt.Sprintf("must be at most %d bytes as JSON", MaxMetadataBytes))
	}
}

// BiText is a text in Chinese and in English.
type BiText struct {
	ZH string `json:"zh"`
	EN string `json:"en"`
}

// RuleText returns the rule of a coupon of kind as a shopper reads it:
// 满100减10 / ¥10 off ¥100. Each kind has its own function.
func RuleText(kind Kind, r Rule) BiText {
	switch kind {
	case KindDirect:
		return DirectText(r)
	case KindThreshold:
		return ThresholdText(r)
	case KindDiscount:
		return DiscountText(r)
	case KindStep:
		return StepText(r)
	case KindComposite:
		return CompositeText(r)
	}
	return BiText{ZH: string(kind), EN: string(kind)}
}

// DirectText is the text of 立减: 立减10元 / ¥10 off.
func DirectText(r Rule) BiText {
	return BiText{ZH: "立减" + Yuan(r.Amount) + "元", EN: "¥" + Yuan(r.Amount) + " off"}
}

// ThresholdText is the text of 满减: 满100减10 / ¥10 off ¥100.
func ThresholdText(r Rule) BiText {
	return BiText{
		ZH: "满" + Yuan(r.Threshold) + "减" + Yuan(r.Amount),
		EN: "¥" + Yuan(r.Amount) + " off ¥" + Yuan(r.Threshold),
	}
}

// DiscountText is the text of 折扣: 满100享8.5折，最高减20元 / 15% off
// ¥100, up to ¥20 off (without the threshold or the cap when they are 0).
func DiscountText(r Rule) BiText {
	zh, en := Zhe(r.Rate), fmt.Sprintf("%d%% off", 100-r.Rate)
	if r.Threshold > 0 {
		zh = "满" + Yuan(r.Threshold) + "享" + zh
		en += " ¥" + Yuan(r.Threshold)
	}
	return BiText{ZH: zh + capZH(r.Cap), EN: en + capEN(r.Cap)}
}

// StepText is the text of 每满减: 每满100减10，最高减50元 / ¥10 off every
// ¥100, up to ¥50 off.
func StepText(r Rule) BiText {
	return BiText{
		ZH: "每满" + Yuan(r.Step) + "减" + Yuan(r.Amount) + capZH(r.Cap),
		EN: "¥" + Yuan(r.Amount) + " off every ¥" + Yuan(r.Step) + capEN(r.Cap),
	}
}

// CompositeText is the text of 满减 + 折扣: 满100减10再享8.5折，最高减30元 /
// ¥10 off ¥100, then 15% off, up to ¥30 off.
func CompositeText(r Rule) BiText {
	return BiText{
		ZH: "满" + Yuan(r.Threshold) + "减" + Yuan(r.Amount) + "再享" + Zhe(r.Rate) + capZH(r.Cap),
		EN: "¥" + Yuan(r.Amount) + " off ¥" + Yuan(r.Threshold) + fmt.Sprintf(", then %d%% off", 100-r.Rate) + capEN(r.Cap),
	}
}

func capZH(cap int64) string {
	if cap <= 0 {
		return ""
	}
	return "，最高减" + Yuan(cap) + "元"
}

func capEN(cap int64) string {
	if cap <= 0 {
		return ""
	}
	return ", up to ¥" + Yuan(cap) + " off"
}

// Zhe writes a rate (the percent paid) as 折: 85 → "8.5折", 80 → "8折",
// 5 → "0.5折", 88 → "8.8折", 95 → "9.5折", 99 → "9.9折".
func Zhe(rate int64) string {
	s := fmt.Sprintf("%d.%d", rate/10, rate%10)
	return strings.TrimSuffix(s, ".0") + "折"
}

// ScopeText summarizes a scope for a shopper: 全场通用 / All goods, or how
// many goods or categories it lists.
func ScopeText(sc Scope) BiText {
	switch sc.Kind {
	case ScopeGoods:
		return BiText{ZH: fmt.Sprintf("限指定商品（%d种）", len(sc.IDs)), EN: plural(len(sc.IDs), "selected item")}
	case ScopeCategories:
		return BiText{ZH: fmt.Sprintf("限指定品类（%d个）", len(sc.IDs)), EN: plural(len(sc.IDs), "selected category")}
	}
	return BiText{ZH: "全场通用", EN: "All goods"}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, what[:len(what)-1])
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// TemplateDisplay is what a shopper is shown of a template beside each of
// its coupons: nothing of its stock, budget, rules' source or audit. Its
// fields are frozen once the template leaves draft, as the rest of the
// spec is, so a display never goes stale.
type TemplateDisplay struct {
	ID           int64             `json:"id"`
	ShopNo       int64             `json:"shopNo"`
	Name         string            `json:"name"`
	Description  string            `json:"description,omitempty"`
	Kind         Kind              `json:"kind"`
	Source       Source            `json:"source"`
	RuleText     BiText            `json:"ruleText"`
	Rule         Rule              `json:"rule"`
	Scope        Scope             `json:"scope"`
	ScopeText    BiText            `json:"scopeText"`
	Validity     Validity          `json:"validity"`
	Stacking     Stacking          `json:"stacking,omitempty"`
	LogoURL      string            `json:"logoUrl,omitempty"`
	Category     string            `json:"category,omitempty"`
	Goods        []string          `json:"goods,omitempty"`
	Instructions string            `json:"instructions,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
}

// DisplayOf returns the display of t.
func DisplayOf(t *Template) *TemplateDisplay {
	return &TemplateDisplay{
		ID: t.ID, ShopNo: t.ShopNo, Name: t.Name, Description: t.Description,
		Kind: t.Kind, Source: t.Source, RuleText: RuleText(t.Kind, t.Rule), Rule: t.Rule,
		Scope: t.Scope, ScopeText: ScopeText(t.Scope), Validity: t.Validity, Stacking: t.Stacking,
		LogoURL: t.LogoURL, Category: t.Category, Goods: t.Goods, Instructions: t.Instructions,
		Metadata: t.Metadata,
	}
}

// PublicTemplate is what a shopper may read of an active template: its
// display, its issue window, the limits per user, and whether any stock
// is left, never how much.
type PublicTemplate struct {
	TemplateDisplay
	Status        TemplateStatus `json:"status"`
	IssueStart    time.Time      `json:"issueStart"`
	IssueEnd      time.Time      `json:"issueEnd"`
	PerUserLimit  int64          `json:"perUserLimit"`
	PerUserDaily  int64          `json:"perUserDaily,omitempty"`
	PerUserWeekly int64          `json:"perUserWeekly,omitempty"`
	InStock       bool           `json:"inStock"`
}

// PublicOf returns the public view of t.
func PublicOf(t *Template) *PublicTemplate {
	return &PublicTemplate{
		TemplateDisplay: *DisplayOf(t),
		Status:          t.Status,
		IssueStart:      t.IssueStart, IssueEnd: t.IssueEnd,
		PerUserLimit: t.PerUserLimit, PerUserDaily: t.PerUserDaily, PerUserWeekly: t.PerUserWeekly,
		InStock: t.Stock > 0,
	}
}
