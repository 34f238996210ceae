package wallet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quanhq/quan"
)

// OrderFactsOf returns the facts an applies rule sees of an order of
// items placed at now: its total, its lines, its categories once each,
// and its shop when every item is of one shop (0 for an order across
// shops). channel is the client's, "" if it did not say.
func OrderFactsOf(items []quan.OrderItem, channel string, now time.Time) *quan.OrderFacts {
	o := &quan.OrderFacts{Channel: channel, At: now, Items: make([]quan.OrderItemFacts, len(items))}
	for i, it := range items {
		o.Total += it.UnitPrice * it.Quantity
		o.Items[i] = quan.OrderItemFacts{GoodsID: it.SKU, CategoryID: it.Category, Price: it.UnitPrice, Qty: it.Quantity}
		if it.Category != "" && !slices.Contains(o.Categories, it.Category) {
			o.Categories = append(o.Categories, it.Category)
		}
		switch {
		case i == 0:
			o.Shop = it.ShopNo
		case o.Shop != it.ShopNo:
			o.Shop = 0
		}
	}
	return o
}

// rulesNotMet returns the coupons of cs (of user) whose applies rule, of
// the version that governs each (TemplateRules.Applies), is not met by an
// order of items on channel at now: nil when none of their templates has an
// applies rule, which costs a look in the RuleBook per template. The
// user's facts are read (from memory, Facts.Facts) only if a rule is
// evaluated.
func (s *Service) rulesNotMet(ctx context.Context, user int64, items []quan.OrderItem, channel string, cs []*quan.Coupon, now time.Time) (map[int64]bool, error) {
	if s.Rules == nil {
		return nil, nil
	}
	var (
		out   map[int64]bool
		order *quan.OrderFacts
		facts *quan.UserFacts
	)
	for _, c := range cs {
		if c.Status != quan.CouponAvailable {
			continue // not usable whatever its rule says
		}
		tr, err := s.Rules.Rules(ctx, c.TemplateID)
		if err != nil {
			return nil, fmt.Errorf("rules of template %d: %w", c.TemplateID, err)
		}
		if !tr.HasApplies() {
			continue
		}
		rule, _ := tr.Applies(c.CreatedAt, now)
		if rule == nil {
			continue
		}
		if order == nil {
			order = OrderFactsOf(items, channel, now)
			facts = &quan.UserFacts{UserID: user}
			if s.Facts != nil {
				if facts, err = s.Facts.Facts(ctx, user); err != nil {
					return nil, fmt.Errorf("facts of user %d: %w", user, err)
				}
			}
		}
		if ok, err := rule.Eval(facts, order, now); err != nil || !ok {
			if out == nil {
				out = map[int64]bool{}
			}
			out[c.ID] = true
		}
	}
	return out, nil
}
