package quan

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on template values. Money is always int64 fen (0.01 yuan).
const (
	MaxStock        = 20_000_000  // most coupons one template may hold in stock
	MaxAmount       = 100_000_000 // 1,000,000 yuan: upper bound of any amount in fen
	MaxPerUserLimit = 100
	MaxScopeIDs     = 1000
	MaxValidHours   = 24 * 366 * 5
	MaxNameLen      = 64
	MaxDescLen      = 512
)

// Kind is how a coupon computes its discount.
type Kind string

// Template kinds.
const (
	KindDirect    Kind = "direct"    // 立减: Amount off, no threshold
	KindThreshold Kind = "threshold" // 满减: Amount off when the in-scope amount ≥ Threshold
	KindDiscount  Kind = "discount"  // 折扣: pay Rate percent, at most Cap off, from Threshold on
	KindStep      Kind = "step"      // 每满减: Amount off per full Step, at most Cap
	// KindComposite is 满减 + 折扣 in one coupon: from Threshold on,
	// Amount off, then Rate percent paid of the rest; at most Cap off in
	// all when Cap is set.
	KindComposite Kind = "composite"
)

// KindNames lists the kinds for messages.
const KindNames = "direct, threshold, discount, step or composite"

// Stacking says which other coupons a coupon may be used with in one
// order. PriceOrder's doc comment states how it combines with the slot
// rule (one platform coupon, one coupon per shop), which always holds.
type Stacking string

// Stacking policies.
const (
	// StackAny combines with any coupon the slot rule allows. It is the
	// default, and "" means it too: it is the one policy quan had before
	// templates chose one, so templates stored before (whose column
	// defaults to it) keep pricing as they did.
	StackAny Stacking = "any"
	// StackExclusive is never used with another coupon.
	StackExclusive Stacking = "exclusive"
	// StackWithShop combines only with shop-funded coupons.
	StackWithShop Stacking = "withShop"
	// StackWithPlatform combines only with platform-funded coupons.
	StackWithPlatform Stacking = "withPlatform"
)

// MaxPriority bounds a template's Priority (0 … MaxPriority).
const MaxPriority = 1000

// allows reports whether a coupon of stacking s may share an order with
// a coupon funded by other. Stacking is a restriction each coupon places
// on the others, so two coupons combine only if each allows the other
// (stacksWith).
func (s Stacking) allows(other Source) bool {
	switch s {
	case StackAny, "":
		return true
	case StackWithShop:
		return other == SourceShop
	case StackWithPlatform:
		return other == SourcePlatform
	}
	return false // exclusive, or unknown: the safe answer
}

// Rule holds a template's amounts, in fen. Which fields apply depends on
// the kind; the others must be zero.
//
// Rate is the percentage of the price the buyer pays: 85 means 8.5折, that
// is 15% off. It ranges 1..99. Discounts round down to the fen.
type Rule struct {
	Amount    int64 `json:"amount,omitempty"`
	Threshold int64 `json:"threshold,omitempty"`
	Rate      int64 `json:"rate,omitempty"`
	Cap       int64 `json:"cap,omitempty"`
	Step      int64 `json:"step,omitempty"`
}

// Source says who funds a coupon.
type Source string

// Sources.
const (
	SourceShop     Source = "shop"
	SourcePlatform Source = "platform"
)

// ScopeKind says which goods a coupon applies to.
type ScopeKind string

// Scope kinds.
const (
	ScopeAll        ScopeKind = "all"
	ScopeGoods      ScopeKind = "goods"      // IDs are goods ids
	ScopeCategories ScopeKind = "categories" // IDs are category ids
)

// Scope restricts a coupon to all goods or to listed goods or categories.
type Scope struct {
	Kind ScopeKind `json:"type"`
	IDs  []string  `json:"ids,omitempty"`
}

// ValidityKind says how an issued coupon's valid window is computed.
type ValidityKind string

// Validity kinds.
const (
	ValidFixed    ValidityKind = "fixed"    // [Start, End)
	ValidRelative ValidityKind = "relative" // Hours from receipt
)

// Validity is the valid window of the coupons a template issues. It never
// extends past the template's issue end.
type Validity struct {
	Kind  ValidityKind `json:"type"`
	Start time.Time    `json:"start,omitzero"`
	End   time.Time    `json:"end,omitzero"`
	Hours int64        `json:"hours,omitempty"`
}

// TemplateStatus is a template's place in its life: draft → active ⇄ paused
// → ended.
type TemplateStatus string

// Template statuses.
const (
	TemplateDraft  TemplateStatus = "draft"
	TemplateActive TemplateStatus = "active"
	TemplatePaused TemplateStatus = "paused"
	TemplateEnded  TemplateStatus = "ended"
)

// TemplateSpec is the part of a template a merchant writes.
type TemplateSpec struct {
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Kind         Kind      `json:"kind"`
	Rule         Rule      `json:"rule"`
	Source       Source    `json:"source"`
	Scope        Scope     `json:"scope"`
	IssueStart   time.Time `json:"issueStart"`
	IssueEnd     time.Time `json:"issueEnd"`
	Validity     Validity  `json:"validity"`
	PerUserLimit int64     `json:"perUserLimit"`
	// CodePrefix, 0 to MaxCodePrefix symbols of CodeAlphabet, starts the
	// code of every coupon of the template.
	CodePrefix string `json:"codePrefix,omitempty"`
	// RemindBefore, if positive, reminds the holder of every coupon still
	// available RemindBefore before its valid end, once, on
	// RemindChannels. Whole seconds, shorter than the validity.
	RemindBefore Duration `json:"remindBefore,omitempty"`
	// RemindChannels are the channels of the expiry reminders, and the
	// email and SMS of the opening reminders (see OpeningChannels).
	RemindChannels []NotifyType `json:"remindChannels,omitempty"`
	// RemindLead is how long before IssueStart the users who asked are
	// reminded that the template opens (预约); 0 means
	// DefaultRemindLead. Whole seconds, at most MaxRemindLead.
	RemindLead Duration `json:"remindLead,omitempty"`
	// Stacking says which coupons this one may be used with in an order;
	// "" means StackAny, and templates.Service writes it so.
	Stacking Stacking `json:"stacking"`
	// Priority, 0 … MaxPriority, orders coupons: when two combinations
	// of coupons take as much off an order with as many coupons, the one
	// whose priorities add up to more is chosen, and within a combination the
	// coupon of higher priority takes its discount first (which matters
	// when the discounts together exceed the order's total). See
	// PriceOrder.
	Priority int64 `json:"priority"`

	// Budgets and period limits (budget.go); 0 sets none. Like the rest
	// of the spec they are frozen once the template leaves draft.
	//
	// Budget is the most discount, in fen, the template's coupons take
	// off orders together: a lock reserves its coupons' discounts, a
	// redeem spends them, a release, a lapse or a refund gives them back
	// (BudgetUsage). A coupon whose discount the budget left cannot cover
	// is unusable (ReasonBudgetSpent).
	Budget int64 `json:"budget,omitempty"`
	// PerUserDaily and PerUserWeekly bound the coupons one user receives
	// of the template in one day and in one week of Asia/Shanghai time
	// (ShanghaiDay, ShanghaiWeek: weeks start on Monday), beside the
	// lifetime PerUserLimit; each at most PerUserLimit.
	PerUserDaily  int64 `json:"perUserDaily,omitempty"`
	PerUserWeekly int64 `json:"perUserWeekly,omitempty"`

	// Eligibility and Applies are the template's rules in CEL (package
	// rules): who may receive or claim its coupons (over user and now),
	// and when a coupon can be used (over order, user and now); "" for
	// none. They are version 0 of the rules, which a draft's edit
	// changes; a change once the template is active is a new version
	// (RulesVersion, templates.Service.ChangeRules). templates.Service
	// type-checks them when the template is saved (checkRules).
	Eligibility string `json:"eligibility,omitempty"`
	Applies     string `json:"applies,omitempty"`

	// What a shopper is shown of the template (TemplateDisplay), beside
	// its name and description: a logo (an http or https URL), a
	// category and the goods or product lines it is for (what shoppers
	// and merchants search templates by), the usage instructions (使用说明)
	// and free metadata for the platform's apps. See validateDisplay for
	// their bounds.
	LogoURL      string            `json:"logoUrl,omitempty"`
	Category     string            `json:"category,omitempty"`
	Goods        []string          `json:"goods,omitempty"`
	Instructions string            `json:"instructions,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	// PromoCode, if set, is the template's shared public code (口令券,
	// promo.go): users claim its coupons by typing it. Kept upper-case
	// (NormalizePromoCode); unique among active and paused templates.
	PromoCode string `json:"promoCode,omitempty"`
}

// Template defines a coupon: its rule, scope, windows, limits and stock.
type Template struct {
	ID     int64 `json:"id"`
	ShopNo int64 `json:"shopNo"`
	TemplateSpec
	Stock      int64          `json:"stock"`      // left to issue
	TotalStock int64          `json:"totalStock"` // initial stock plus every increase
	Status     TemplateStatus `json:"status"`
	CreatedBy  string         `json:"createdBy"`
	CreatedAt  time.Time      `json:"createdAt"`
	UpdatedAt  time.Time      `json:"updatedAt"`
}

// Validate reports every problem of t at once, as an EINVALID *Error with
// one FieldError per problem, or nil.
func (t *Template) Validate() error {
	var v Validation
	if t.ShopNo <= 0 {
		v.Add("shopNo", "must be a positive shop number")
	}
	t.TemplateSpec.validate(&v)
	switch {
	case t.Stock < 0:
		v.Add("stock", "must not be negative")
	case t.Stock > MaxStock:
		v.Add("stock", fmt.Sprintf("must be at most %d", MaxStock))
	case t.Status == TemplateDraft && t.Stock < 1:
		v.Add("stock", fmt.Sprintf("must be between 1 and %d", MaxStock))
	}
	return v.Err("the template has invalid fields")
}

func (s *TemplateSpec) validate(v *Validation) {
	name := strings.TrimSpace(s.Name)
	switch {
	case name == "":
		v.Add("name", "is required")
	case utf8.RuneCountInString(s.Name) > MaxNameLen:
		v.Add("name", fmt.Sprintf("must be at most %d characters", MaxNameLen))
	default:
		v.Line("name", s.Name)
	}
	switch {
	case utf8.RuneCountInString(s.Description) > MaxDescLen:
		v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescLen))
	default:
		// A description may run over several lines, and may use tabs to
		// line things up; a name is one line.
		v.Text("description", s.Description, "\n\t")
	}
	s.validateRule(v)
	switch s.Source {
	case SourceShop, SourcePlatform:
	case "":
		v.Add("source", "is required: shop or platform")
	default:
		v.Add("source", fmt.Sprintf("%q is not a source: use shop or platform", s.Source))
	}
	s.validateScope(v)
	s.validateStacking(v)
	if len(s.CodePrefix) > MaxCodePrefix {
		v.Add("codePrefix", fmt.Sprintf("at most %d symbols", MaxCodePrefix))
	}
	for i := range len(s.CodePrefix) {
		if codeIndex[s.CodePrefix[i]] < 0 {
			v.Add("codePrefix", fmt.Sprintf("%q is not one of %s", s.CodePrefix[i], CodeAlphabet))
			break
		}
	}
	issueOK := true
	for _, t := range []struct {
		field string
		at    time.Time
	}{{"issueStart", s.IssueStart}, {"issueEnd", s.IssueEnd}} {
		switch {
		case t.at.IsZero():
			v.Add(t.field, "is required")
			issueOK = false
		case TimeProblem(t.at) != "":
			v.Time(t.field, t.at)
			issueOK = false
		}
	}
	if issueOK && !s.IssueEnd.After(s.IssueStart) {
		v.Add("issueEnd", "must be after issueStart")
		issueOK = false
	}
	s.validateValidity(v, issueOK)
	if s.PerUserLimit < 1 || s.PerUserLimit > MaxPerUserLimit {
		v.Add("perUserLimit", fmt.Sprintf("must be between 1 and %d", MaxPerUserLimit))
	}
	s.validateReminders(v)
	s.validateBudget(v)
	if s.PromoCode != "" {
		if p := PromoCodeProblem(s.PromoCode); p != "" {
			v.Add("promoCode", p)
		}
	}
	s.validateDisplay(v)
	// A rule may run over several lines; templates.Service compiles it.
	v.Text("eligibility", s.Eligibility, ruleControls)
	v.Text("applies", s.Applies, ruleControls)
}

// ruleControls are the control characters a rule's text may hold: its
// lines and their indentation.
const ruleControls = "\n\r\t"

func (s *TemplateSpec) validateRule(v *Validation) {
	r := s.Rule
	amount := func(field string, x int64, required bool) bool {
		switch {
		case x < 0:
			v.Add(field, "must not be negative")
		case x == 0 && required:
			v.Add(field, "is required and must be positive (in fen)")
		case x > MaxAmount:
			v.Add(field, fmt.Sprintf("must be at most %d fen", MaxAmount))
		default:
			return true
		}
		return false
	}
	unused := func(field string, x int64) {
		if x != 0 {
			v.Add(field, fmt.Sprintf("does not apply to a %s coupon", s.Kind))
		}
	}
	switch s.Kind {
	case KindDirect:
		amount("rule.amount", r.Amount, true)
		unused("rule.threshold", r.Threshold)
		unused("rule.rate", r.Rate)
		unused("rule.cap", r.Cap)
		unused("rule.step", r.Step)
	case KindThreshold:
		okA := amount("rule.amount", r.Amount, true)
		okT := amount("rule.threshold", r.Threshold, true)
		if okA && okT && r.Amount > r.Threshold {
			v.Add("rule.amount", "must not exceed the threshold")
		}
		unused("rule.rate", r.Rate)
		unused("rule.cap", r.Cap)
		unused("rule.step", r.Step)
	case KindDiscount:
		if r.Rate < 1 || r.Rate > 99 {
			v.Add("rule.rate", "must be between 1 and 99: the percent the buyer pays, 85 means 8.5折")
		}
		amount("rule.cap", r.Cap, false)
		amount("rule.threshold", r.Threshold, false)
		unused("rule.amount", r.Amount)
		unused("rule.step", r.Step)
	case KindComposite:
		okA := amount("rule.amount", r.Amount, true)
		okT := amount("rule.threshold", r.Threshold, true)
		okC := amount("rule.cap", r.Cap, false)
		if okA && okT && r.Amount > r.Threshold {
			v.Add("rule.amount", "must not exceed the threshold")
		}
		if r.Rate < 1 || r.Rate > 99 {
			v.Add("rule.rate", "must be between 1 and 99: the percent paid of what is left after the amount off, 85 means 8.5折")
		}
		if okA && okC && r.Cap > 0 && r.Cap < r.Amount {
			v.Add("rule.cap", "must be at least the amount, or 0 for no cap")
		}
		unused("rule.step", r.Step)
	case KindStep:
		okA := amount("rule.amount", r.Amount, true)
		okS := amount("rule.step", r.Step, true)
		okC := amount("rule.cap", r.Cap, true)
		if okA && okS && r.Amount > r.Step {
			v.Add("rule.amount", "must not exceed the step")
		}
		if okA && okC && r.Cap < r.Amount {
			v.Add("rule.cap", "must be at least the amount of one step")
		}
		unused("rule.threshold", r.Threshold)
		unused("rule.rate", r.Rate)
	case "":
		v.Add("kind", "is required: "+KindNames)
	default:
		v.Add("kind", fmt.Sprintf("%q is not a kind: use %s", s.Kind, KindNames))
	}
}

func (s *TemplateSpec) validateStacking(v *Validation) {
	switch s.Stacking {
	case "", StackAny, StackExclusive, StackWithShop:
	case StackWithPlatform:
		// The slot rule allows one platform coupon an order: a platform
		// coupon that stacks only with platform coupons stacks with none.
		if s.Source == SourcePlatform {
			v.Add("stacking", "a platform coupon cannot stack with another platform coupon (one per order): use exclusive")
		}
	default:
		v.Add("stacking", fmt.Sprintf("%q is not a stacking policy: use any, exclusive, withShop or withPlatform", s.Stacking))
	}
	if s.Priority < 0 || s.Priority > MaxPriority {
		v.Add("priority", fmt.Sprintf("must be between 0 and %d", MaxPriority))
	}
}

func (s *TemplateSpec) validateScope(v *Validation) {
	switch s.Scope.Kind {
	case ScopeAll:
		if len(s.Scope.IDs) > 0 {
			v.Add("scope.ids", "must be empty when the scope is all goods")
		}
		return
	case ScopeGoods, ScopeCategories:
	case "":
		v.Add("scope.type", "is required: all, goods or categories")
		return
	default:
		v.Add("scope.type", fmt.Sprintf("%q is not a scope: use all, goods or categories", s.Scope.Kind))
		return
	}
	if len(s.Scope.IDs) == 0 {
		v.Add("scope.ids", fmt.Sprintf("must list at least one id for a %s scope", s.Scope.Kind))
		return
	}
	if len(s.Scope.IDs) > MaxScopeIDs {
		v.Add("scope.ids", fmt.Sprintf("must list at most %d ids", MaxScopeIDs))
		return
	}
	seen := make(map[string]bool, len(s.Scope.IDs))
	for i, id := range s.Scope.IDs {
		field := fmt.Sprintf("scope.ids[%d]", i)
		switch {
		case strings.TrimSpace(id) == "":
			v.Add(field, "must not be empty")
		case len(id) > 64:
			v.Add(field, "must be at most 64 characters")
		case TextProblem(id, "") != "":
			v.Line(field, id)
		case seen[id]:
			v.Add(field, fmt.Sprintf("%q is listed twice", id))
		}
		seen[id] = true
	}
}

func (s *TemplateSpec) validateValidity(v *Validation, issueOK bool) {
	d := s.Validity
	switch d.Kind {
	case ValidFixed:
		if d.Hours != 0 {
			v.Add("validity.hours", "does not apply to a fixed validity")
		}
		ok := true
		for _, t := range []struct {
			field string
			at    time.Time
		}{{"validity.start", d.Start}, {"validity.end", d.End}} {
			switch {
			case t.at.IsZero():
				v.Add(t.field, "is required for a fixed validity")
				ok = false
			case TimeProblem(t.at) != "":
				v.Time(t.field, t.at)
				ok = false
			}
		}
		if ok && !d.End.After(d.Start) {
			v.Add("validity.end", "must be after validity.start")
			ok = false
		}
		if ok && issueOK && d.End.After(s.IssueEnd) {
			v.Add("validity.end", "must not be after issueEnd: coupons never outlive their template")
		}
	case ValidRelative:
		if !d.Start.IsZero() || !d.End.IsZero() {
			v.Add("validity", "start and end do not apply to a relative validity")
		}
		if d.Hours < 1 || d.Hours > MaxValidHours {
			v.Add("validity.hours", fmt.Sprintf("must be between 1 and %d", MaxValidHours))
		}
	case "":
		v.Add("validity.type", "is required: fixed or relative")
	default:
		v.Add("validity.type", fmt.Sprintf("%q is not a validity: use fixed or relative", d.Kind))
	}
}

// CouponWindow returns the valid window of a coupon received at t: the
// fixed window, or Hours from receipt, and never past the issue end.
func (t *Template) CouponWindow(received time.Time) (start, end time.Time) {
	switch t.Validity.Kind {
	case ValidFixed:
		start, end = t.Validity.Start, t.Validity.End
	default:
		start, end = received, received.Add(time.Duration(t.Validity.Hours)*time.Hour)
	}
	if end.After(t.IssueEnd) {
		end = t.IssueEnd
	}
	return start, end
}

// Activate moves a draft template to active. It returns ErrTransition from
// any other status, and EINVALID when the issue window closed already.
func (t *Template) Activate(now time.Time) error {
	if t.Status != TemplateDraft {
		return t.transitionErr("activate", "only a draft can be activated")
	}
	if !now.Before(t.IssueEnd) {
		return &Error{Code: EINVALID, Message: "the template cannot be activated",
			Fields: []FieldError{{Field: "issueEnd", Message: "the issue window has closed already"}}}
	}
	t.Status = TemplateActive
	return nil
}

// Pause moves an active template to paused; ErrTransition otherwise.
func (t *Template) Pause() error {
	if t.Status != TemplateActive {
		return t.transitionErr("pause", "only an active template can be paused")
	}
	t.Status = TemplatePaused
	return nil
}

// Resume moves a paused template back to active; ErrTransition otherwise.
func (t *Template) Resume() error {
	if t.Status != TemplatePaused {
		return t.transitionErr("resume", "only a paused template can be resumed")
	}
	t.Status = TemplateActive
	return nil
}

// Terminate ends a template for good, from draft, active or paused. Coupons
// already issued stay valid. Ending an ended template is ErrTransition.
func (t *Template) Terminate() error {
	if t.Status == TemplateEnded {
		return t.transitionErr("terminate", "it has ended already")
	}
	t.Status = TemplateEnded
	return nil
}

// IncreaseStock adds n to the stock. n must be positive, the template not
// ended, and the stock stays at most MaxStock (ErrStockLimit).
func (t *Template) IncreaseStock(n int64) error {
	if n < 1 || n > MaxStock {
		return &Error{Code: EINVALID, Message: "invalid stock increase",
			Fields: []FieldError{{Field: "amount", Message: fmt.Sprintf("must be between 1 and %d", MaxStock)}}}
	}
	if t.Status == TemplateEnded {
		return t.transitionErr("increase the stock of", "it has ended")
	}
	if t.Stock+n > MaxStock {
		return Errorf(ESTOCKLIMIT, "stock would be %d, more than the limit of %d", t.Stock+n, MaxStock)
	}
	t.Stock += n
	t.TotalStock += n
	return nil
}

// Edit replaces the merchant-written part of a draft template, and its
// stock. It returns ErrNotDraft unless the template is a draft, and the
// validation errors of the result.
func (t *Template) Edit(spec TemplateSpec, stock int64) error {
	if t.Status != TemplateDraft {
		return Errorf(ENOTDRAFT, "template %d is %s: only a draft template can be edited", t.ID, t.Status)
	}
	t.TemplateSpec = spec
	t.Stock, t.TotalStock = stock, stock
	return t.Validate()
}

func (t *Template) transitionErr(verb, why string) error {
	return Errorf(ETRANSITION, "cannot %s template %d in status %s: %s", verb, t.ID, t.Status, why)
}

// Validation collects field errors so a caller learns every problem at once.
type Validation struct{ fields []FieldError }

func (v *Validation) Add(field, msg string) {
	v.fields = append(v.fields, FieldError{Field: field, Message: msg})
}

// Page checks the offset and limit of a listing (0 means the default).
func (v *Validation) Page(offset, limit int) {
	if offset < 0 {
		v.Add("offset", "must not be negative")
	}
	if limit < 0 || limit > MaxPageSize {
		v.Add("limit", fmt.Sprintf("must be between 1 and %d", MaxPageSize))
	}
}

func (v *Validation) Err(msg string) error {
	if len(v.fields) == 0 {
		return nil
	}
	return &Error{Code: EINVALID, Message: msg, Fields: v.fields}
}
