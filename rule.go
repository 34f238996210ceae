package quan

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// UserFacts are what quan knows of a user for eligibility rules and segments.
type UserFacts struct {
	UserID       int64             `json:"userId"`
	Level        int64             `json:"level"` // member level, 0 = none
	Tags         []string          `json:"tags"`
	RegisteredAt time.Time         `json:"registeredAt,omitzero"` // zero if unknown
	Region       string            `json:"region"`
	Orders       int64             `json:"orders"`          // orders so far; 0 = a first order is next
	Attrs        map[string]string `json:"attrs,omitempty"` // any other facts the merchant imports
}

// OrderFacts are an order as the applies rule sees it (amounts in fen).
type OrderFacts struct {
	Shop       int64            `json:"shop"`
	Channel    string           `json:"channel"` // e.g. "app", "mini", "web"
	Total      int64            `json:"total"`
	Items      []OrderItemFacts `json:"items"`
	Categories []string         `json:"categories"`  // the categories of the items, once each
	At         time.Time        `json:"at,omitzero"` // when the order is placed; zero means the rule's now
}

// OrderItemFacts are one line of an order.
type OrderItemFacts struct {
	GoodsID    string `json:"goodsId"`
	CategoryID string `json:"categoryId"`
	Price      int64  `json:"price"` // unit price in fen
	Qty        int64  `json:"qty"`
}

// RuleKind says what a rule decides, and so which facts it may read.
type RuleKind string

// Rule kinds.
const (
	RuleEligibility RuleKind = "eligibility" // who may receive or claim a coupon: over user and now
	RuleApplies     RuleKind = "applies"     // when a coupon can be used: over order, user and now
	RuleSegment     RuleKind = "segment"     // which users a distribution targets: over user and now
)

// Valid reports whether k is one of the rule kinds.
func (k RuleKind) Valid() bool {
	switch k {
	case RuleEligibility, RuleApplies, RuleSegment:
		return true
	}
	return false
}

// RuleEngine compiles rule expressions; the rules package implements it on
// CEL, so the domain depends on no expression language.
type RuleEngine interface {
	// Compile type-checks expr as a rule of the given kind and prices it.
	// A rule that does not parse, refers to facts its kind does not see,
	// is not true-or-false, costs too much or is too long is an *Error
	// EINVALID with one FieldError whose Field is the kind ("eligibility")
	// and whose Message starts with the position, e.g.
	// "1:7: undeclared reference to 'levl'".
	Compile(kind RuleKind, expr string) (CompiledRule, error)
}

// CompiledRule is a checked rule, safe to evaluate from many goroutines at
// once.
type CompiledRule interface {
	// Source is the expression the rule was compiled from.
	Source() string
	// Eval decides the rule on the facts. order is nil for eligibility and
	// segment rules and required for applies rules; a nil user is a user
	// of whom nothing is known (all facts zero). An error (an *Error
	// EINVALID naming the kind) means the rule could not decide on these
	// facts — a missing attrs key, or the evaluation cost limit reached —
	// and callers treat it as not met.
	Eval(user *UserFacts, order *OrderFacts, now time.Time) (bool, error)
	// Filter is what a scan of users' facts needs for this rule: the facts
	// it reads and conditions it implies, so that a user the filter does
	// not pass is one Eval decides false (never one it cannot decide on).
	// A rule of no simple condition gives a filter with no Where.
	Filter() FactsFilter
}

// RuleSource gives the compiled rules of templates to the paths that
// decide them: claims, codes, distributions and the wallet
// (templates.RuleBook, which keeps them in memory).
type RuleSource interface {
	// Rules returns the compiled rules of template, nil if it has none;
	// ErrNotFound if there is no such template.
	Rules(ctx context.Context, template int64) (*TemplateRules, error)
	// Cached returns the rules of template if they are at hand without
	// reading the store, and whether they are.
	Cached(template int64) (*TemplateRules, bool)
}

// FactsSource gives the facts of users to the rules that decide on them
// (facts.Service, which keeps them in memory once read).
type FactsSource interface {
	// Facts returns what is known of user: zero facts for a user the
	// store knows nothing of.
	Facts(ctx context.Context, user int64) (*UserFacts, error)
}

// EligibleBy returns nil if the eligibility rule of tr (the rules of
// template) in force at now lets user receive its coupons, or there is
// none, else ENOTELIGIBLE. The user's facts are read from attrs (nil:
// nothing is known of users) only if there is a rule.
func EligibleBy(ctx context.Context, tr *TemplateRules, attrs FactsSource, template, user int64, now time.Time) error {
	rule, _ := tr.Eligibility(now)
	if rule == nil {
		return nil
	}
	facts := &UserFacts{UserID: user}
	if attrs != nil {
		f, err := attrs.Facts(ctx, user)
		if err != nil {
			return fmt.Errorf("facts of user %d: %w", user, err)
		}
		facts = f
	}
	if ok, err := rule.Eval(facts, nil, now); err == nil && ok {
		return nil
	}
	return Errorf(ENOTELIGIBLE, "you are not eligible for coupons of template %d", template)
}

// TemplateRules are the compiled rules of one template, every version.
// A nil *TemplateRules has none.
type TemplateRules struct {
	TemplateID int64
	Status     TemplateStatus // when read
	versions   []compiledVersion
}

type compiledVersion struct {
	RulesVersion
	eligibility, applies CompiledRule // nil for none
}

// AddVersion appends the next version of r's rules, v compiled: its
// eligibility and applies rules, nil for none. Versions are added in
// order, the template's own rules first (version 0).
func (r *TemplateRules) AddVersion(v RulesVersion, eligibility, applies CompiledRule) {
	r.versions = append(r.versions, compiledVersion{RulesVersion: v, eligibility: eligibility, applies: applies})
}

// InForce returns the version in force at t (RulesVersion).
func (r *TemplateRules) InForce(t time.Time) int64 {
	if r == nil {
		return 0
	}
	v := 0
	for i := 1; i < len(r.versions); i++ {
		if !t.Before(r.versions[i].EffectiveAt) {
			v = i
		}
	}
	return int64(v)
}

// Eligibility returns the eligibility rule in force at now and its
// version; nil if that version has none.
func (r *TemplateRules) Eligibility(now time.Time) (CompiledRule, int64) {
	if r == nil {
		return nil, 0
	}
	v := r.InForce(now)
	return r.versions[v].eligibility, v
}

// Applies returns the applies rule that governs, at now, a coupon issued
// at issued, and its version: that of the version in force at issued,
// or of the latest version in force at now that applies to coupons
// issued before it (ApplyToIssued). nil if that version has none.
func (r *TemplateRules) Applies(issued, now time.Time) (CompiledRule, int64) {
	if r == nil {
		return nil, 0
	}
	v := r.InForce(issued)
	for i := v + 1; i < int64(len(r.versions)); i++ {
		w := &r.versions[i]
		if w.ApplyToIssued && !now.Before(w.EffectiveAt) {
			v = i
		}
	}
	return r.versions[v].applies, v
}

// HasApplies reports whether any version has an applies rule.
func (r *TemplateRules) HasApplies() bool {
	if r == nil {
		return false
	}
	for i := range r.versions {
		if r.versions[i].applies != nil {
			return true
		}
	}
	return false
}

// RulesVersion is one version of a template's rules. Version 0 is the
// rules the template was saved with (TemplateSpec.Eligibility and
// Applies); a change of the rules of an active or paused template
// ("临时规则调整") is version 1, 2, … in force from its EffectiveAt on.
// Versions are never changed or removed.
//
// The version in force at a time t is the highest whose EffectiveAt is
// not after t (version 0 always is). A claim or a distribution is judged
// by the eligibility rule in force when it is made, and a coupon keeps the
// version in force when it was issued (its CreatedAt): the applies rule of
// that version decides whether it can be used, unless a later version in
// force says ApplyToIssued, whose applies rule then governs it (the
// latest such).
type RulesVersion struct {
	TemplateID  int64  `json:"templateId"`
	Version     int64  `json:"version"`
	Eligibility string `json:"eligibility"` // "" for none: anyone may receive
	Applies     string `json:"applies"`     // "" for none: the coupon's scope and threshold alone decide
	// EffectiveAt is when the version comes into force; zero for
	// version 0, in force from the start.
	EffectiveAt time.Time `json:"effectiveAt,omitzero"`
	// ApplyToIssued makes the Applies rule govern the coupons issued
	// under earlier versions too, from EffectiveAt on.
	ApplyToIssued bool      `json:"applyToIssued"`
	CreatedBy     string    `json:"createdBy"`
	CreatedAt     time.Time `json:"createdAt"`
}

// Validate reports every problem of v as a new version at once: rules
// that are not text (TextProblem, lines allowed) and an effective time
// out of range (TimeProblem). Whether the rules compile is for the engine
// to say.
func (v *RulesVersion) Validate() error {
	var val Validation
	val.Text("eligibility", v.Eligibility, ruleControls)
	val.Text("applies", v.Applies, ruleControls)
	val.Time("effectiveAt", v.EffectiveAt)
	return val.Err("invalid rules change")
}

// RulesStore keeps the versions of templates' rules after version 0.
type RulesStore interface {
	// AddRulesVersion loads template id of shop (AnyShop: any) under its
	// lock and calls check with it and its latest version (nil if it has
	// none after version 0). If check returns nil, v is stored as the next
	// version (v.TemplateID and v.Version are set), with an audit entry by
	// actor, action ActionRules, at v.CreatedAt, whose changes are
	// RulesChanges; all in one transaction. If check fails nothing is
	// written and its error is returned. ErrNotFound if there is no such
	// template. check must not call the store.
	AddRulesVersion(ctx context.Context, shop, id int64, actor string, v *RulesVersion,
		check func(t *Template, latest *RulesVersion) error) error
	// RulesVersions returns the versions of template after version 0,
	// oldest first; none for a template that has none or does not exist.
	RulesVersions(ctx context.Context, template int64) ([]RulesVersion, error)
}

// RulesChanges lists what version v changes of the rules before it
// (latest, or version 0 of t if latest is nil), as the audit trail shows
// it: the version, each rule that differs, the effective time, and
// applyToIssued when set.
func RulesChanges(t *Template, latest, v *RulesVersion) []FieldChange {
	prev := RulesVersion{Eligibility: t.Eligibility, Applies: t.Applies}
	if latest != nil {
		prev = *latest
	}
	raw := func(x any) json.RawMessage {
		b, _ := json.Marshal(x) // strings, numbers, times and bools
		return b
	}
	out := []FieldChange{{Field: "rulesVersion", Before: raw(prev.Version), After: raw(v.Version)}}
	if prev.Eligibility != v.Eligibility {
		out = append(out, FieldChange{Field: "eligibility", Before: raw(prev.Eligibility), After: raw(v.Eligibility)})
	}
	if prev.Applies != v.Applies {
		out = append(out, FieldChange{Field: "applies", Before: raw(prev.Applies), After: raw(v.Applies)})
	}
	out = append(out, FieldChange{Field: "effectiveAt", Before: json.RawMessage("null"), After: raw(v.EffectiveAt)})
	if v.ApplyToIssued {
		out = append(out, FieldChange{Field: "applyToIssued", Before: raw(false), After: raw(true)})
	}
	return out
}
