package wallet

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// priceWithBudgets is priceOrder (notMet: the coupons whose applies rule
// the order does not meet), with the coupons whose template's budget
// left cannot cover their discount unusable (ReasonBudgetSpent) and out
// of the best combination. It reads the budget of each template with one
// among the usable coupons, once: what is left changes with every lock,
// so it is never cached. The lock checks again, atomically, in the store.
func (s *Service) priceWithBudgets(ctx context.Context, items []quan.OrderItem, cs []*quan.Coupon, templates map[int64]*quan.Template, now time.Time, notMet map[int64]bool) (quan.Quote, error) {
	q := quan.PriceOrderExcept(items, cs, templates, now, notMet)
	left := map[int64]int64{}
	spent := map[int64]bool{} // coupon → its budget cannot cover it
	for _, cq := range q.Coupons {
		t := templates[cq.TemplateID]
		if !cq.Usable || t == nil || t.Budget == 0 {
			continue
		}
		l, ok := left[t.ID]
		if !ok {
			u, err := s.Coupons.BudgetUsage(ctx, t.ID)
			if err != nil {
				return quan.Quote{}, err
			}
			l = u.Left()
			left[t.ID] = l
		}
		if cq.Discount > l {
			spent[cq.CouponID] = true
		}
	}
	if len(spent) == 0 {
		return q, nil
	}
	rest := make([]*quan.Coupon, 0, len(cs))
	for _, c := range cs {
		if !spent[c.ID] {
			rest = append(rest, c)
		}
	}
	r := quan.PriceOrderExcept(items, rest, templates, now, notMet)
	// Every coupon in its place, those refused as the first pricing saw
	// them, unusable.
	byID := make(map[int64]quan.CouponQuote, len(r.Coupons))
	for _, cq := range r.Coupons {
		byID[cq.CouponID] = cq
	}
	for i, cq := range q.Coupons {
		if spent[cq.CouponID] {
			cq.Usable, cq.Discount, cq.Reason = false, 0, quan.ReasonBudgetSpent
			q.Coupons[i] = cq
			continue
		}
		q.Coupons[i] = byID[cq.CouponID]
	}
	r.Coupons = q.Coupons
	return r, nil
}
