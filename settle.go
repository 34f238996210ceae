package quan

import (
	"fmt"
	"slices"
	"time"
)

// OrderItem is one line of an order being priced. Prices are in fen.
type OrderItem struct {
	SKU       string `json:"sku"`
	Category  string `json:"category"`
	ShopNo    int64  `json:"shopNo"`
	UnitPrice int64  `json:"unitPrice"`
	Quantity  int64  `json:"quantity"`
}

// Order limits.
const (
	MaxOrderItems    = 500
	MaxItemQuantity  = 100_000
	MaxItemUnitPrice = 100_000_000_00 // 100 million yuan
)

// ValidateOrder reports every problem of an order at once: its items,
// and the channel it is placed on ("app", "mini", "web"; "" if the client
// does not say), which an applies rule reads as order.channel: one line
// of text (TextProblem) of at most MaxFactBytes bytes, like any fact a
// rule is priced for. An item's sku and category are lines of text too.
func ValidateOrder(items []OrderItem, channel string) error {
	var v Validation
	switch {
	case len(channel) > MaxFactBytes:
		v.Add("channel", fmt.Sprintf("is %d bytes long: at most %d", len(channel), MaxFactBytes))
	default:
		v.Line("channel", channel)
	}
	switch {
	case len(items) == 0:
		v.Add("items", "an order needs at least one item")
	case len(items) > MaxOrderItems:
		v.Add("items", fmt.Sprintf("at most %d items", MaxOrderItems))
	}
	for i, it := range items {
		f := func(name string) string { return fmt.Sprintf("items[%d].%s", i, name) }
		if it.SKU == "" {
			v.Add(f("sku"), "is required")
		}
		v.Line(f("sku"), it.SKU)
		v.Line(f("category"), it.Category)
		if it.ShopNo <= 0 {
			v.Add(f("shopNo"), "must be a positive shop number")
		}
		if it.UnitPrice < 0 || it.UnitPrice > MaxItemUnitPrice {
			v.Add(f("unitPrice"), fmt.Sprintf("must be 0 … %d fen", int64(MaxItemUnitPrice)))
		}
		if it.Quantity < 1 || it.Quantity > MaxItemQuantity {
			v.Add(f("quantity"), fmt.Sprintf("must be 1 … %d", MaxItemQuantity))
		}
	}
	return v.Err("invalid order")
}

// MaxOrderID bounds an order id, in bytes.
const MaxOrderID = 64

// ValidateOrderID refuses an order id (the {order} of the order routes)
// that is empty, longer than MaxOrderID bytes or not one line of text
// (TextProblem), naming the field "order".
func ValidateOrderID(order string) error {
	var v Validation
	switch {
	case order == "" || len(order) > MaxOrderID:
		v.Add("order", fmt.Sprintf("order id %q: 1 to %d bytes", order, MaxOrderID))
	default:
		v.Line("order", order)
	}
	return v.Err("invalid order id")
}

// Reasons a coupon does not apply to an order.
const (
	ReasonThresholdNotMet = "threshold_not_met" // the in-scope amount is below the threshold
	ReasonOutOfScope      = "out_of_scope"      // no item of the order is in the coupon's scope
	ReasonNotYetValid     = "not_yet_valid"     // its valid window has not begun
	ReasonExpired         = "expired"           // its valid window has closed
	ReasonNotAvailable    = "not_available"     // locked by another order, used or revoked
	// ReasonRuleNotMet (wallet_rules.go): the template's applies rule says no.
)

// CouponQuote is what one coupon would do for an order.
type CouponQuote struct {
	CouponID   int64  `json:"couponId"`
	TemplateID int64  `json:"templateId"`
	Source     Source `json:"source"`
	ShopNo     int64  `json:"shopNo"`
	Usable     bool   `json:"usable"`
	Reason     string `json:"reason,omitempty"` // when not usable
	InScope    int64  `json:"inScope"`          // the amount of the items it applies to
	Discount   int64  `json:"discount"`         // when usable
	// Stacking and Priority are the template's (see PriceOrder).
	Stacking Stacking `json:"stacking"`
	Priority int64    `json:"priority"`
}

// Quote prices an order with a user's coupons.
type Quote struct {
	Total   int64         `json:"total"` // the order's amount before coupons
	Coupons []CouponQuote `json:"coupons"`
	// Best is the usable coupon with the largest discount alone (0: none).
	Best         int64 `json:"best"`
	BestDiscount int64 `json:"bestDiscount"`
	// Combination is the best set of coupons together under the
	// stacking rules (PriceOrder), in the order their discounts apply,
	// and what it takes off.
	Combination         []int64 `json:"combination"`
	CombinationDiscount int64   `json:"combinationDiscount"`
	Payable             int64   `json:"payable"` // Total less CombinationDiscount
}

// Discount returns what rule r of kind takes off an in-scope amount, and
// whether the amount meets the rule's threshold. Discounts round down to
// the fen and never exceed the amount.
func (r Rule) Discount(kind Kind, amount int64) (int64, bool) {
	var off int64
	switch kind {
	case KindDirect:
		off = r.Amount
	case KindThreshold:
		if amount < r.Threshold {
			return 0, false
		}
		off = r.Amount
	case KindDiscount:
		if amount < r.Threshold {
			return 0, false
		}
		off = percentOf(amount, 100-r.Rate)
		if r.Cap > 0 {
			off = min(off, r.Cap)
		}
	case KindStep:
		steps := amount / r.Step
		if steps == 0 {
			return 0, false
		}
		off = min(steps*r.Amount, r.Cap)
	case KindComposite:
		if amount < r.Threshold {
			return 0, false
		}
		// Amount ≤ Threshold ≤ amount: the rest is not negative.
		off = r.Amount + percentOf(amount-r.Amount, 100-r.Rate)
		if r.Cap > 0 {
			off = min(off, r.Cap)
		}
	}
	return min(off, amount), true
}

// percentOf returns pct percent of amount (≥ 0), rounded down to the fen.
// amount × pct would overflow 64 bits for the largest orders (500 items
// × 100,000 × 10^10 fen is 5 × 10^17), so the hundreds and the rest are
// taken apart: with amount = 100q + r, amount × pct / 100 rounded down is
// q × pct + r × pct / 100 rounded down, exactly.
func percentOf(amount, pct int64) int64 {
	return amount/100*pct + amount%100*pct/100
}

// inScope reports whether an item is in the scope of a coupon of t: a
// shop's coupon applies only to that shop's items, a platform's to all.
func inScope(t *Template, it OrderItem) bool {
	if t.Source == SourceShop && it.ShopNo != t.ShopNo {
		return false
	}
	switch t.Scope.Kind {
	case ScopeGoods:
		return slices.Contains(t.Scope.IDs, it.SKU)
	case ScopeCategories:
		return slices.Contains(t.Scope.IDs, it.Category)
	}
	return true
}

// PriceOrder prices items with the user's coupons (each with its
// template) at now: what each coupon would take off alone, and the best
// combination of them under the stacking rules (bestCombination, whose
// doc comment states the rules, the choice and its cost). Every coupon is
// computed on the listed prices of the items in its scope, and the
// discounts together never exceed the order's total. Integer arithmetic
// only.
func PriceOrder(items []OrderItem, coupons []*Coupon, templates map[int64]*Template, now time.Time) Quote {
	return PriceOrderExcept(items, coupons, templates, now, nil)
}

// PriceOrderExcept is PriceOrder where the coupons in notMet, by id, are not
// usable for the order by their applies rule (ReasonRuleNotMet), once
// every other check passed.
func PriceOrderExcept(items []OrderItem, coupons []*Coupon, templates map[int64]*Template, now time.Time, notMet map[int64]bool) Quote {
	var q Quote
	for _, it := range items {
		q.Total += it.UnitPrice * it.Quantity
	}
	q.Coupons = make([]CouponQuote, 0, len(coupons))
	for _, c := range coupons {
		t := templates[c.TemplateID]
		cq := CouponQuote{CouponID: c.ID, TemplateID: c.TemplateID, ShopNo: c.ShopNo}
		if t == nil {
			cq.Reason = ReasonNotAvailable
			q.Coupons = append(q.Coupons, cq)
			continue
		}
		cq.Source, cq.Stacking, cq.Priority = t.Source, t.Stacking, t.Priority
		if cq.Stacking == "" {
			cq.Stacking = StackAny
		}
		for _, it := range items {
			if inScope(t, it) {
				cq.InScope += it.UnitPrice * it.Quantity
			}
		}
		off, met := t.Rule.Discount(t.Kind, cq.InScope)
		switch {
		case c.Status == CouponExpired || c.Status == CouponAvailable && !now.Before(c.ValidEnd):
			cq.Reason = ReasonExpired
		case c.Status != CouponAvailable:
			cq.Reason = ReasonNotAvailable
		case now.Before(c.ValidStart):
			cq.Reason = ReasonNotYetValid
		case cq.InScope == 0:
			cq.Reason = ReasonOutOfScope
		case !met:
			cq.Reason = ReasonThresholdNotMet
		case notMet[c.ID]:
			cq.Reason = ReasonRuleNotMet
		default:
			cq.Usable, cq.Discount = true, off
			if off > q.BestDiscount || q.Best == 0 {
				q.Best, q.BestDiscount = c.ID, off
			}
		}
		q.Coupons = append(q.Coupons, cq)
	}
	combo := bestCombination(q.Coupons, q.Total)
	q.Combination = make([]int64, len(combo))
	for i, cq := range combo {
		q.Combination[i] = cq.CouponID
		q.CombinationDiscount += cq.Discount
	}
	q.CombinationDiscount = min(q.CombinationDiscount, q.Total)
	q.Payable = q.Total - q.CombinationDiscount
	return q
}

// ReasonRuleNotMet: the coupon's applies rule says no to this order (or
// cannot decide on it).
const ReasonRuleNotMet = "rule_not_met"
