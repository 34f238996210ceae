package templates

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// normalizeRules trims the rules of a spec: a rule of blanks is none.
func normalizeRules(s *quan.TemplateSpec) {
	s.Eligibility = strings.TrimSpace(s.Eligibility)
	s.Applies = strings.TrimSpace(s.Applies)
}

// checkRules type-checks the rules of a template about to be saved with
// engine and returns their problems as FieldErrors ("eligibility",
// "applies", the message starting with the position): none when both are
// empty or compile. Without an engine any rule is refused.
func checkRules(engine quan.RuleEngine, eligibility, applies string) []quan.FieldError {
	var bad []quan.FieldError
	for _, r := range []struct {
		kind quan.RuleKind
		src  string
	}{{quan.RuleEligibility, eligibility}, {quan.RuleApplies, applies}} {
		if r.src == "" {
			continue
		}
		if engine == nil {
			bad = append(bad, quan.FieldError{Field: string(r.kind), Message: "rules are not enabled on this server"})
			continue
		}
		if _, err := engine.Compile(r.kind, r.src); err != nil {
			if e, ok := err.(*quan.Error); ok && len(e.Fields) > 0 {
				bad = append(bad, e.Fields...)
			} else {
				bad = append(bad, quan.FieldError{Field: string(r.kind), Message: err.Error()})
			}
		}
	}
	return bad
}

// withRuleErrors adds the rules' problems bad to err, the template's
// validation error (nil if it is valid): one EINVALID naming every
// field, so a merchant learns every problem at once.
func withRuleErrors(err error, bad []quan.FieldError) error {
	if len(bad) == 0 {
		return err
	}
	if err == nil {
		return &quan.Error{Code: quan.EINVALID, Message: "the template has invalid fields", Fields: bad}
	}
	if e, ok := err.(*quan.Error); ok && e.Code == quan.EINVALID {
		e.Fields = append(e.Fields, bad...)
		return e
	}
	return err
}

// RulesChange is what a merchant sends to change the rules of an active
// or paused template: a new version.
type RulesChange struct {
	// Eligibility and Applies are the new version's rules; nil keeps the
	// rule of the latest version, "" means none.
	Eligibility *string `json:"eligibility"`
	Applies     *string `json:"applies"`
	// EffectiveAt is when the version comes into force: now or later,
	// and not before the latest version's; zero means now.
	EffectiveAt time.Time `json:"effectiveAt,omitzero"`
	// ApplyToIssued makes the new applies rule govern the coupons issued
	// before too (RulesVersion).
	ApplyToIssued bool `json:"applyToIssued"`
}

// ChangeRules adds a version of the rules of template id (an active or
// paused template: a draft's rules are edited with it, ErrTransition for
// a draft or an ended one), type-checked like a template's (EINVALID
// naming eligibility or applies), in force from in.EffectiveAt. The
// change is in the audit trail (ActionRules), and this process's RuleBook
// forgets what it knew of the template; others learn it within their
// RuleBook's TTL.
func (s *Service) ChangeRules(ctx context.Context, who quan.Identity, id int64, in RulesChange) (*quan.RulesVersion, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	given := quan.RulesVersion{EffectiveAt: in.EffectiveAt}
	if in.Eligibility != nil {
		given.Eligibility = *in.Eligibility
	}
	if in.Applies != nil {
		given.Applies = *in.Applies
	}
	if err := given.Validate(); err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	eff := in.EffectiveAt.UTC().Truncate(time.Microsecond)
	if in.EffectiveAt.IsZero() {
		eff = now
	}
	if eff.Before(now) {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "invalid rules change", Fields: []quan.FieldError{{Field: "effectiveAt",
			Message: "must be now or later: leave it out for now"}}}
	}
	trim := func(p *string) *string {
		if p == nil {
			return nil
		}
		x := strings.TrimSpace(*p)
		return &x
	}
	elig, appl := trim(in.Eligibility), trim(in.Applies)
	v := &quan.RulesVersion{EffectiveAt: eff, ApplyToIssued: in.ApplyToIssued, CreatedBy: who.String(), CreatedAt: now}
	var bad []quan.FieldError
	err = s.Versions.AddRulesVersion(ctx, shop, id, who.String(), v, func(t *quan.Template, latest *quan.RulesVersion) error {
		switch t.Status {
		case quan.TemplateDraft:
			return quan.Errorf(quan.ETRANSITION, "template %d is a draft: edit its rules with the template", id)
		case quan.TemplateEnded:
			return quan.Errorf(quan.ETRANSITION, "template %d has ended: its rules no longer change", id)
		}
		cur := quan.RulesVersion{Eligibility: t.Eligibility, Applies: t.Applies}
		if latest != nil {
			cur = *latest
			if eff.Before(latest.EffectiveAt) {
				return &quan.Error{Code: quan.EINVALID, Message: "invalid rules change", Fields: []quan.FieldError{{Field: "effectiveAt",
					Message: fmt.Sprintf("must not be before %s, when version %d comes into force", latest.EffectiveAt.Format(time.RFC3339), latest.Version)}}}
			}
		}
		v.Eligibility, v.Applies = cur.Eligibility, cur.Applies
		if elig != nil {
			v.Eligibility = *elig
		}
		if appl != nil {
			v.Applies = *appl
		}
		if bad = checkRules(s.Rules, v.Eligibility, v.Applies); len(bad) > 0 {
			return &quan.Error{Code: quan.EINVALID, Message: "invalid rules", Fields: bad}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("change the rules of template %d: %w", id, err)
	}
	s.Book.Forget(id)
	return v, nil
}

// RulesInfo is every version of a template's rules and the one in
// force now.
type RulesInfo struct {
	TemplateID int64               `json:"templateId"`
	Current    int64               `json:"current"` // the version in force now
	Versions   []quan.RulesVersion `json:"versions"`
}

// RulesVersions returns the versions of the rules of template id, version
// 0 first, and the one in force now. ErrNotFound if the caller's shop has
// no such template.
func (s *Service) RulesVersions(ctx context.Context, who quan.Identity, id int64) (*RulesInfo, error) {
	t, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	return s.rulesInfo(ctx, t)
}

func (s *Service) rulesInfo(ctx context.Context, t *quan.Template) (*RulesInfo, error) {
	var later []quan.RulesVersion
	if s.Versions != nil {
		var err error
		if later, err = s.Versions.RulesVersions(ctx, t.ID); err != nil {
			return nil, fmt.Errorf("rules of template %d: %w", t.ID, err)
		}
	}
	info := &RulesInfo{TemplateID: t.ID, Versions: make([]quan.RulesVersion, 0, 1+len(later))}
	info.Versions = append(info.Versions, quan.RulesVersion{TemplateID: t.ID, Eligibility: t.Eligibility, Applies: t.Applies,
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt})
	info.Versions = append(info.Versions, later...)
	now := s.Now.UTC()
	for _, v := range later {
		if !now.Before(v.EffectiveAt) {
			info.Current = v.Version
		}
	}
	return info, nil
}

// RulesSample is what an operator evaluates a template's rules on: sample
// facts, and optionally rules to try instead of the template's.
type RulesSample struct {
	// Eligibility and Applies, if either is set, are evaluated instead of
	// the template's rules in force (both: a nil one is not evaluated).
	Eligibility *string          `json:"eligibility"`
	Applies     *string          `json:"applies"`
	User        quan.UserFacts   `json:"user"`
	Order       *quan.OrderFacts `json:"order"`        // nil: an empty order
	Now         time.Time        `json:"now,omitzero"` // zero: now
}

// RuleResult is what one rule gave on sample facts.
type RuleResult struct {
	Rule   string `json:"rule"`             // the expression; "" when there is none
	Result *bool  `json:"result,omitempty"` // absent when there is no rule or it could not decide
	Error  string `json:"error,omitempty"`  // why it could not decide
}

// RulesEvaluation is what EvaluateRules found.
type RulesEvaluation struct {
	Version     *int64     `json:"version,omitempty"` // the version evaluated; absent for rules given
	Eligibility RuleResult `json:"eligibility"`
	Applies     RuleResult `json:"applies"`
}

// EvaluateRules evaluates the rules of template id in force at sample.Now
// (or those sample gives) on sample's facts, for an operator trying a
// rule before relying on it. A rule given that does not compile is
// EINVALID naming it, with its position; one that cannot decide on the
// facts (a missing attrs key) is a result with Error. ErrNotFound if the
// caller's shop has no such template.
func (s *Service) EvaluateRules(ctx context.Context, who quan.Identity, id int64, sample RulesSample) (*RulesEvaluation, error) {
	t, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	var v quan.Validation
	v.Time("now", sample.Now)
	if err := v.Err("invalid sample"); err != nil {
		return nil, err
	}
	now := sample.Now
	if now.IsZero() {
		now = s.Now.UTC()
	}
	out := &RulesEvaluation{}
	var elig, appl string
	if sample.Eligibility != nil || sample.Applies != nil {
		if sample.Eligibility != nil {
			elig = strings.TrimSpace(*sample.Eligibility)
		}
		if sample.Applies != nil {
			appl = strings.TrimSpace(*sample.Applies)
		}
	} else {
		info, err := s.rulesInfo(ctx, t)
		if err != nil {
			return nil, err
		}
		v := info.Versions[0]
		for _, x := range info.Versions[1:] {
			if !now.Before(x.EffectiveAt) {
				v = x
			}
		}
		out.Version = &v.Version
		elig, appl = v.Eligibility, v.Applies
	}
	if bad := checkRules(s.Rules, elig, appl); len(bad) > 0 {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "invalid rules", Fields: bad}
	}
	order := sample.Order
	if order == nil {
		order = &quan.OrderFacts{}
	}
	eval := func(kind quan.RuleKind, src string) RuleResult {
		res := RuleResult{Rule: src}
		if src == "" {
			return res
		}
		r, err := s.Rules.Compile(kind, src)
		if err == nil {
			var ok bool
			if ok, err = r.Eval(&sample.User, order, now); err == nil {
				res.Result = &ok
				return res
			}
		}
		res.Error = ruleErrorText(err)
		return res
	}
	out.Eligibility = eval(quan.RuleEligibility, elig)
	out.Applies = eval(quan.RuleApplies, appl)
	return out, nil
}

// ruleErrorText is what a rule's error says, without the code.
func ruleErrorText(err error) string {
	if e, ok := err.(*quan.Error); ok && len(e.Fields) > 0 {
		return e.Fields[0].Message
	}
	return quan.ErrorMessage(err)
}
