package wallet

import (
	"context"
	"errors"

	"github.com/quanhq/quan"
)

// CounterRedemption is a sale at a shop's counter paid partly with the
// coupon the shopper shows (到店核销).
type CounterRedemption struct {
	Order   string           `json:"orderId"`
	Items   []quan.OrderItem `json:"items"`
	Channel string           `json:"channel,omitempty"`
}

// CounterResult is the coupon redeemed at a counter and what it took off.
type CounterResult struct {
	Coupon   *quan.Coupon `json:"coupon"`
	Discount int64        `json:"discount"` // fen off the order
	Total    int64        `json:"total"`    // the order's total before it
}

// RedeemByCode redeems, for a shop's key with the redeem scope, the
// coupon whose code the shopper shows at the shop's counter: it locks
// the coupon for the order at the discount it takes off the items, as
// Lock prices it (stacking, scope, threshold, rules, budget), and spends
// it at once, as Redeem does. The coupon is its holder's; the order id is
// the counter's. A code of another shop's coupon is ErrNotFound, as is a
// made-up one; a mistyped code is EINVALID; a coupon that is not usable
// for the order is ENOTUSABLE, one used or locked already ETRANSITION or
// ECONFLICT.
func (s *Service) RedeemByCode(ctx context.Context, who quan.Identity, code string, in CounterRedemption) (_ *CounterResult, err error) {
	defer func() { s.Counters.Failed(quan.CouponAvailable, quan.CouponUsed, err) }()
	switch {
	case who.Role == "":
		return nil, quan.ErrUnauthorized
	case !who.HasScope(quan.ScopeRedeem) || who.ShopNo <= 0:
		return nil, quan.Errorf(quan.EFORBIDDEN, "redeeming at a counter needs a shop's service key with the redeem scope")
	}
	c, err := quan.ParseCode(code)
	if err != nil {
		return nil, err
	}
	id, err := s.Coupons.CodeKey().CouponID(c, c[:len(c)-quan.CodeLength])
	if err != nil {
		return nil, err
	}
	cp, err := s.Coupons.Coupon(ctx, who.ShopNo, id)
	if errors.Is(err, quan.ErrNotFound) || err == nil && cp.Code != c {
		return nil, quan.Errorf(quan.ENOTFOUND, "no coupon of shop %d has code %s", who.ShopNo, c)
	}
	if err != nil {
		return nil, err
	}
	req := LockRequest{Items: in.Items, Channel: in.Channel, CouponIDs: []int64{cp.ID}}
	if _, err := s.lock(ctx, who, cp.UserID, in.Order, req, true); err != nil {
		return nil, err
	}
	cs, err := s.redeem(ctx, who, cp.UserID, in.Order)
	if err != nil {
		return nil, err
	}
	res := &CounterResult{Total: orderTotal(in.Items)}
	for _, c := range cs {
		if c.ID == cp.ID {
			res.Coupon, res.Discount = c, c.Discount
		}
	}
	if res.Coupon == nil {
		return nil, quan.Errorf(quan.ECONFLICT, "coupon %d was not redeemed for order %s", cp.ID, in.Order)
	}
	return res, nil
}

func orderTotal(items []quan.OrderItem) int64 {
	var total int64
	for _, it := range items {
		total += it.UnitPrice * it.Quantity
	}
	return total
}
