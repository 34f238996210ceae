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

// ValidateOrder reports every problem of an order's items at once.
func ValidateOrder(items []OrderItem) error {
	var v validator
	switch {
	case len(items) == 0:
		v.add("items", "an order needs at least one item")
	case len(items) > MaxOrderItems:
		v.add("items", fmt.Sprintf("at most %d items", MaxOrderItems))
	}
	for i, it := range items {
		f := func(name string) string { return fmt.Sprintf("items[%d].%s", i, name) }
		if it.SKU == "" {
			v.add(f("sku"), "is required")
		}
		if it.ShopNo <= 0 {
			v.add(f("shopNo"), "must be a positive shop number")
		}
		if it.UnitPrice < 0 || it.UnitPrice > MaxItemUnitPrice {
			v.add(f("unitPrice"), fmt.Sprintf("must be 0 … %d fen", int64(MaxItemUnitPrice)))
		}
		if it.Quantity < 1 || it.Quantity > MaxItemQuantity {
			v.add(f("quantity"), fmt.Sprintf("must be 1 … %d", MaxItemQuantity))
		}
	}
	return v.err("invalid order")
}

// Reasons a coupon does not apply to an order.
const (
	ReasonThresholdNotMet = "threshold_not_met" // the in-scope amount is below the threshold
	ReasonOutOfScope      = "out_of_scope"      // no item of the order is in the coupon's scope
	ReasonNotYetValid     = "not_yet_valid"     // its valid window has not begun
	ReasonExpired         = "expired"           // its valid window has closed
	ReasonNotAvailable    = "not_available"     // locked by another order, used or revoked
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
}

// Quote prices an order with a user's coupons.
type Quote struct {
	Total   int64         `json:"total"` // the order's amount before coupons
	Coupons []CouponQuote `json:"coupons"`
	// Best is the usable coupon with the largest discount alone (0: none).
	Best         int64 `json:"best"`
	BestDiscount int64 `json:"bestDiscount"`
	// Combination is the set of coupons with the largest discount together
	// under the stacking rules, and what it takes off.
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
		// amount ≤ 500 items × 100,000 × 10^10 fen: the product with at
		// most 99 fits 64 bits.
		off = amount * (100 - r.Rate) / 100
		if r.Cap > 0 {
			off = min(off, r.Cap)
		}
	case KindStep:
		steps := amount / r.Step
		if steps == 0 {
			return 0, false
		}
		off = min(steps*r.Amount, r.Cap)
	}
	return min(off, amount), true
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

// stackSlot is the stacking rule, which quoting and locking both apply: a
// combination holds at most one coupon of each slot, and the slot of a
// platform coupon is 0, that of a shop coupon its shop. So one platform
// coupon stacks with one coupon of each shop, and two coupons of one
// template, which share their slot, never stack.
func stackSlot(cq CouponQuote) int64 {
	if cq.Source == SourceShop {
		return cq.ShopNo
	}
	return 0
}

// slotName names a slot of stackSlot for messages.
func slotName(slot int64) string {
	if slot == 0 {
		return "platform"
	}
	return fmt.Sprintf("shop %d", slot)
}

// PriceOrder prices items with the user's coupons (each with its
// template) at now. The stacking rules, documented in the README:
//   - at most one platform coupon, and at most one shop coupon per shop
//     (stackSlot), so coupons of one template never stack;
//   - every coupon is computed on the listed prices of the items in its
//     scope, and the discounts together never exceed the order's total.
//
// Each coupon's discount depends only on its own items, so the best
// combination is the best platform coupon with the best coupon of each
// shop. Integer arithmetic only.
func PriceOrder(items []OrderItem, coupons []*Coupon, templates map[int64]*Template, now time.Time) Quote {
	var q Quote
	for _, it := range items {
		q.Total += it.UnitPrice * it.Quantity
	}
	q.Coupons = make([]CouponQuote, 0, len(coupons))
	type pick struct {
		id, template, discount int64
	}
	best := map[int64]pick{} // shop (0: platform) → best usable coupon
	for _, c := range coupons {
		t := templates[c.TemplateID]
		cq := CouponQuote{CouponID: c.ID, TemplateID: c.TemplateID, ShopNo: c.ShopNo}
		if t == nil {
			cq.Reason = ReasonNotAvailable
			q.Coupons = append(q.Coupons, cq)
			continue
		}
		cq.Source = t.Source
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
		default:
			cq.Usable, cq.Discount = true, off
			if off > q.BestDiscount || q.Best == 0 {
				q.Best, q.BestDiscount = c.ID, off
			}
			slot := stackSlot(cq)
			if b, ok := best[slot]; !ok || off > b.discount || off == b.discount && c.ID < b.id {
				best[slot] = pick{c.ID, c.TemplateID, off}
			}
		}
		q.Coupons = append(q.Coupons, cq)
	}
	slots := make([]int64, 0, len(best))
	for s := range best {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	for _, s := range slots {
		if best[s].discount > 0 {
			q.Combination = append(q.Combination, best[s].id)
			q.CombinationDiscount += best[s].discount
		}
	}
	if q.Combination == nil {
		q.Combination = []int64{}
	}
	q.CombinationDiscount = min(q.CombinationDiscount, q.Total)
	q.Payable = q.Total - q.CombinationDiscount
	return q
}
