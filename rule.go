package quan

import "time"

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
