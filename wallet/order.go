package wallet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/quanhq/quan"
)

// change runs fn on the coupons ids of user as seen, read a moment ago
// without a lock, and writes what it made of them if they are still so:
// one round trip. If one changed in between (another order, the sweeper),
// fn runs again on the coupons as they are, under the store's lock.
func (s *Service) change(ctx context.Context, user int64, seen []*quan.Coupon, ids []int64, fn func([]*quan.Coupon) error) ([]*quan.Coupon, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	before := make([]*quan.Coupon, 0, len(ids))
	for _, id := range ids {
		i := slices.IndexFunc(seen, func(c *quan.Coupon) bool { return c.ID == id })
		if i < 0 {
			// The locked way says what is missing.
			return s.Coupons.UpdateCoupons(ctx, user, ids, fn)
		}
		before = append(before, seen[i])
	}
	after := make([]*quan.Coupon, len(before))
	for i, c := range before {
		cp := *c
		after[i] = &cp
	}
	if err := fn(after); err != nil {
		return nil, err
	}
	changed := false
	for i, c := range after {
		b := before[i]
		changed = changed || c.Status != b.Status || c.OrderID != b.OrderID || !c.LockedUntil.Equal(b.LockedUntil)
	}
	if !changed {
		return after, nil // nothing to write: a change made before, asked again
	}
	ok, err := s.Coupons.SwapCoupons(ctx, user, before, after)
	if err != nil {
		return nil, err
	}
	if ok {
		return after, nil
	}
	return s.Coupons.UpdateCoupons(ctx, user, ids, fn)
}

// LockRequest asks to hold coupons for an order at the discount the client
// was quoted.
type LockRequest struct {
	Items            []quan.OrderItem `json:"items"`
	Channel          string           `json:"channel,omitempty"` // where the order is placed, as in the quote
	CouponIDs        []int64          `json:"couponIds"`
	ExpectedDiscount int64            `json:"expectedDiscount"`
}

// Key identifies the request among the locks of its order: a digest of
// its items, its channel and its coupons (in id order, each once). The discount
// expected is left out: the items and coupons decide it, and a lock asked
// again at another is refused as a price change.
func (r LockRequest) Key() string {
	h := sha256.New()
	for _, it := range r.Items {
		// Quoted, the strings cannot run into the next field.
		fmt.Fprintf(h, "%q %q %d %d %d\n", it.SKU, it.Category, it.ShopNo, it.UnitPrice, it.Quantity)
	}
	fmt.Fprintf(h, "channel %q coupons %v", r.Channel, slices.Compact(slices.Sorted(slices.Values(r.CouponIDs))))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Lock holds the coupons for order until the lock TTL runs out. The server
// prices the order again: the coupons must be usable together under the
// stacking rules and give exactly the expected discount. Locking a locked
// order again with the same items and coupons (LockRequest.Key) returns its
// coupons (idempotent); with other items or coupons it is a conflict, as
// is a coupon that another order holds.
func (s *Service) Lock(ctx context.Context, who quan.Identity, order string, req LockRequest) (_ []*quan.Coupon, err error) {
	defer func() { s.Counters.Failed(quan.CouponAvailable, quan.CouponLocked, err) }()
	user, err := settlerOf(who)
	if err != nil {
		return nil, err
	}
	return s.lock(ctx, who, user, order, req, false)
}

// lock is Lock for user; with priced, at whatever discount the coupons
// take off the order rather than ExpectedDiscount, which is ignored.
func (s *Service) lock(ctx context.Context, who quan.Identity, user int64, order string, req LockRequest, priced bool) ([]*quan.Coupon, error) {
	if err := quan.ValidateOrderID(order); err != nil {
		return nil, err
	}
	if err := quan.ValidateOrder(req.Items, req.Channel); err != nil {
		return nil, err
	}
	if len(req.CouponIDs) == 0 {
		return nil, quan.Errorf(quan.EINVALID, "couponIds: name at least one coupon")
	}
	now := s.Now.UTC()
	key := req.Key()
	// The coupons named, and those the order holds already: a lock of
	// the order by another request is a conflict.
	all, err := s.Coupons.OrderCoupons(ctx, user, order, req.CouponIDs)
	if err != nil {
		return nil, err
	}
	if err := reached(who, all, "such coupon of your shop for order "+order); err != nil {
		return nil, err
	}
	if err := s.notRefunded(ctx, user, order); err != nil {
		return nil, err
	}
	for _, c := range all {
		c := *c
		c.Lapse(now)
		if c.Status == quan.CouponLocked && c.OrderID == order && c.LockKey != key {
			return nil, lockedOtherwise(order)
		}
	}
	templates, err := s.templatesOf(ctx, all)
	if err != nil {
		return nil, err
	}
	var chosen []*quan.Coupon
	for _, id := range slices.Compact(slices.Sorted(slices.Values(req.CouponIDs))) {
		i := slices.IndexFunc(all, func(c *quan.Coupon) bool { return c.ID == id })
		if i < 0 {
			return nil, quan.Errorf(quan.ENOTFOUND, "you hold no coupon %d", id)
		}
		c := *all[i]
		c.Lapse(now)
		switch {
		case c.Status == quan.CouponLocked && c.OrderID == order:
			c.Status = quan.CouponAvailable // price it as the lock found it
		case c.Status == quan.CouponLocked:
			return nil, quan.Errorf(quan.ECONFLICT, "coupon %d is held by another order", id)
		}
		chosen = append(chosen, &c)
	}
	notMet, err := s.rulesNotMet(ctx, user, req.Items, req.Channel, chosen, now)
	if err != nil {
		return nil, err
	}
	q := quan.PriceOrderExcept(req.Items, chosen, templates, now, notMet)
	var discount int64
	for i, cq := range q.Coupons {
		if !cq.Usable {
			return nil, quan.Errorf(quan.ENOTUSABLE, "coupon %d cannot be used for this order: %s", cq.CouponID, cq.Reason)
		}
		// The stacking rules of bestCombination: every two coupons asked
		// for must stack, whatever the quote would have chosen.
		for _, other := range q.Coupons[:i] {
			if why := quan.StackConflict(other, cq); why != "" {
				return nil, quan.Errorf(quan.ENOTUSABLE, "%s", why)
			}
		}
		discount += cq.Discount
	}
	discount = min(discount, q.Total)
	if !priced && discount != req.ExpectedDiscount {
		return nil, quan.Errorf(quan.EPRICECHANGED, "these coupons take %d fen off this order, not the %d expected: quote again", discount, req.ExpectedDiscount)
	}
	// Each coupon keeps its share of the discount, the statistics' discount
	// given once it is used: its own, in the order discounts apply
	// (applyOrder: priority first), until the order's total caps them.
	shares := map[int64]int64{}
	left := discount
	applied := slices.Clone(q.Coupons)
	quan.SortInApplyOrder(applied)
	for _, cq := range applied {
		shares[cq.CouponID] = min(cq.Discount, left)
		left -= shares[cq.CouponID]
	}
	until := now.Add(cmp0(s.LockTTL, DefaultLockTTL))
	var events []quan.CouponEvent
	cs, err := s.change(ctx, user, all, req.CouponIDs, func(cs []*quan.Coupon) error {
		events = events[:0]
		for _, c := range cs {
			old := c.Status
			c.Lapse(now)
			switch {
			case c.Status == quan.CouponLocked && c.OrderID == order && c.LockKey == key:
				continue // locked by this request before: idempotent
			case c.Status == quan.CouponLocked && c.OrderID == order:
				return lockedOtherwise(order) // by another request meanwhile
			case c.Status == quan.CouponLocked:
				return quan.Errorf(quan.ECONFLICT, "coupon %d is held by another order", c.ID)
			}
			if err := c.Lock(order, now, until); err != nil {
				return err
			}
			c.LockKey, c.Discount = key, shares[c.ID]
			events = append(events, c.Event(old, now))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock coupons for order %s: %w", order, err)
	}
	s.Counters.Written(events)
	return cs, nil
}

// notRefunded is EREFUNDED if order of user was refunded: a coupon given
// back by a refund is spent again through a new order only.
func (s *Service) notRefunded(ctx context.Context, user int64, order string) error {
	if s.Refunds == nil {
		return nil
	}
	refunded, err := s.Refunds.OrderRefunded(ctx, user, order)
	switch {
	case err != nil:
		return err
	case refunded:
		return quan.Errorf(quan.EREFUNDED, "order %s was refunded: settle the coupons with a new order", order)
	}
	return nil
}

// lockedOtherwise is the conflict of locking order again with another
// request than the one that locked it.
func lockedOtherwise(order string) error {
	return quan.Errorf(quan.ECONFLICT, "order %s is locked already, with other items or coupons: release it to lock it again", order)
}

func cmp0(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Redeem spends the coupons order holds: it was paid. Redeeming a paid
// order again returns its coupons; an order that holds none (never
// locked, released, or its lock ran out) is an illegal transition.
// It takes no coupons from the client: it spends the set Lock accepted,
// which stacked then and stacks still, as a template's stacking and
// priority, like the rest of its spec, are frozen once it leaves draft
// (and only then has coupons); an order locked again with other coupons
// is a conflict.
func (s *Service) Redeem(ctx context.Context, who quan.Identity, order string) ([]*quan.Coupon, error) {
	user, err := settlerOf(who)
	if err != nil {
		s.Counters.Failed(quan.CouponLocked, quan.CouponUsed, err)
		return nil, err
	}
	return s.redeem(ctx, who, user, order)
}

// redeem is Redeem for user.
func (s *Service) redeem(ctx context.Context, who quan.Identity, user int64, order string) ([]*quan.Coupon, error) {
	return s.orderChange(ctx, who, user, order, "redeem", quan.CouponTransition{From: quan.CouponLocked, To: quan.CouponUsed}, func(c *quan.Coupon, now time.Time) (bool, error) {
		switch c.Status {
		case quan.CouponUsed:
			return false, nil
		case quan.CouponLocked:
			return true, c.Redeem(now)
		}
		return false, nil
	}, func(cs []*quan.Coupon) error {
		for _, c := range cs {
			if c.Status == quan.CouponUsed || c.Status == quan.CouponLocked {
				return nil
			}
		}
		return quan.Errorf(quan.ETRANSITION, "order %s holds no coupons to pay with: it was never locked, was released, or its lock ran out", order)
	})
}

// Release gives back the coupons order holds: it was cancelled. It is
// idempotent: an order that holds nothing releases nothing. A paid order
// is refunded, not released.
func (s *Service) Release(ctx context.Context, who quan.Identity, order string) ([]*quan.Coupon, error) {
	user, err := settlerOf(who)
	if err != nil {
		s.Counters.Failed(quan.CouponLocked, quan.CouponAvailable, err)
		return nil, err
	}
	return s.orderChange(ctx, who, user, order, "release", quan.CouponTransition{From: quan.CouponLocked, To: quan.CouponAvailable}, func(c *quan.Coupon, now time.Time) (bool, error) {
		switch c.Status {
		case quan.CouponLocked:
			return true, c.Release(now)
		case quan.CouponUsed:
			return false, quan.Errorf(quan.ETRANSITION, "coupon %d was paid with: refund order %s instead", c.ID, order)
		}
		return false, nil
	}, nil)
}

// Refund gives back the coupons a paid order used: available again while
// valid, expired otherwise. With Refunds set it applies once: the order
// is recorded refunded with the coupons' change, and a second refund is
// EREFUNDED, as are a lock and a redeem of the order after it. An order
// that used no coupons refunds nothing: ETRANSITION.
func (s *Service) Refund(ctx context.Context, who quan.Identity, order string) ([]*quan.Coupon, error) {
	user, err := settlerOf(who)
	if err != nil {
		s.Counters.Failed(quan.CouponUsed, quan.CouponAvailable, err)
		return nil, err
	}
	if s.Refunds != nil {
		return s.orderChange(ctx, who, user, order, "refund", quan.CouponTransition{From: quan.CouponUsed, To: quan.CouponAvailable}, refundCoupon(order), func(cs []*quan.Coupon) error {
			for _, c := range cs {
				if c.Status == quan.CouponUsed {
					return nil
				}
			}
			return quan.Errorf(quan.ETRANSITION, "order %s paid with no coupons: there is nothing to refund", order)
		})
	}
	return s.orderChange(ctx, who, user, order, "refund", quan.CouponTransition{From: quan.CouponUsed, To: quan.CouponAvailable}, refundCoupon(order), nil)
}

// refundCoupon is the change of each coupon of a refunded order.
func refundCoupon(order string) func(c *quan.Coupon, now time.Time) (bool, error) {
	return func(c *quan.Coupon, now time.Time) (bool, error) {
		switch c.Status {
		case quan.CouponUsed:
			return true, c.Refund(now)
		case quan.CouponLocked:
			return false, quan.Errorf(quan.ETRANSITION, "coupon %d is locked, not paid: release order %s instead", c.ID, order)
		}
		return false, nil
	}
}

// orderChange applies change to the coupons of user that order holds
// or used, in one transaction, after check (if any) passes on them. tr is
// the change asked for, under which a refusal or failure is counted.
func (s *Service) orderChange(ctx context.Context, who quan.Identity, user int64, order, verb string, tr quan.CouponTransition,
	change func(c *quan.Coupon, now time.Time) (bool, error), check func([]*quan.Coupon) error) (_ []*quan.Coupon, err error) {
	defer func() { s.Counters.Failed(tr.From, tr.To, err) }()
	if err := quan.ValidateOrderID(order); err != nil {
		return nil, err
	}
	all, err := s.Coupons.OrderCoupons(ctx, user, order, nil)
	if err != nil {
		return nil, err
	}
	if err := reached(who, all, "order "+order+" of your shop"); err != nil {
		return nil, err
	}
	if len(all) == 0 && verb == "redeem" {
		// Say why an order that holds nothing cannot be paid, if it is
		// that it was refunded.
		if err := s.notRefunded(ctx, user, order); err != nil {
			return nil, err
		}
	}
	ids := make([]int64, len(all))
	for i, c := range all {
		ids[i] = c.ID
	}
	now := s.Now.UTC()
	var events []quan.CouponEvent
	write := func(fn func([]*quan.Coupon) error) ([]*quan.Coupon, error) { return s.change(ctx, user, all, ids, fn) }
	if verb == "refund" && s.Refunds != nil {
		// The order is recorded refunded in the coupons' transaction.
		write = func(fn func([]*quan.Coupon) error) ([]*quan.Coupon, error) {
			return s.Refunds.RefundOrder(ctx, user, order, now, ids, fn)
		}
	}
	cs, err := write(func(cs []*quan.Coupon) error {
		events = events[:0]
		for _, c := range cs {
			old := c.Status
			if c.Lapse(now) {
				events = append(events, c.Event(old, now))
				old = c.Status
			}
		}
		mine := cs[:0:0]
		for _, c := range cs {
			if c.OrderID == order || c.Status == quan.CouponUsed {
				mine = append(mine, c)
			}
		}
		if check != nil {
			if err := check(mine); err != nil {
				return err
			}
		}
		for _, c := range mine {
			old := c.Status
			changed, err := change(c, now)
			if err != nil {
				return err
			}
			if changed {
				events = append(events, c.Event(old, now))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s order %s: %w", verb, order, err)
	}
	s.Counters.Written(events)
	if cs == nil {
		cs = []*quan.Coupon{}
	}
	return cs, nil
}
