package claims

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/flight"
)

// The shop's daily claim cap (ShopSettings.DailyClaimCap) on the claim
// path.
//
// Where it is enforced: a counter of the shop's claims per Shanghai day in
// the Cache (ShopClaimsTake), taken before the template's reservation and
// given back when the claim then gets no coupon. It cannot live in the
// template's reservation: a reservation touches the keys of one template
// only (one hash tag, so that a Redis Cluster runs it in one slot), and
// the cap spans the shop's templates. Two calls instead of one are the
// price, paid only by the claims of a shop with a cap: with none set (0)
// a claim reads two in-process maps (template → shop, shop → cap) and
// makes no extra call to the cache or the store.
//
// Unlike stock and per-user limits, which the store checks again when it
// decides a claim, the cap is enforced by the counter alone: the store
// does not refuse a claim over it. So what the counter loses, it may let
// through:
//   - When the cache lost the counter (a Redis restart, a FLUSHALL, a
//     process with an in-process cache restarting), the next claim finds
//     it cold and reloads it from the store's count of the coupons the
//     shop's templates issued by claim that day (the hourly statistics'
//     claimed column, ShopStore.ShopClaimed). Claims accepted and still on
//     the bus, or decided in the hour after midnight but accepted before,
//     are not in that count: the shop may then get as many more.
//   - With an in-process cache and several processes, each counts its own
//     claims: the cap holds per process. Give them a shared (Redis) cache.
//   - A claim given back after the counter was reloaded (it failed in the
//     store meanwhile) is taken off a count that did not include it.
//   - A claim whose hand-off failed, without a claim ledger, is given back
//     at once; should it reach the store all the same, it counts nowhere
//     if issued, and is given back twice if it fails there.
//
// A failed claim is given back under its id (once, however often its
// failure is settled); the claim path gives back what it took in the same
// call.
//
// Distribution and codes are not capped: the cap is on claims, what the
// shop's customers take in a flash sale; what the shop itself hands out
// it decides already.

// shopCapTake is the count a claim took in its shop's day; nil when it
// took none (no cap, or a retry counted by its first try).
type shopCapTake struct {
	s         *Service
	shop, day int64
	kept      bool
}

// keep says the claim holds its count: accepted, or in the hands of the
// reaper, which gives it back if the claim fails.
func (t *shopCapTake) keep() {
	if t != nil {
		t.kept = true
	}
}

// giveBack gives the count back unless kept.
func (t *shopCapTake) giveBack(ctx context.Context) {
	if t == nil || t.kept {
		return
	}
	if err := t.s.Cache.ShopClaimsGive(ctx, t.shop, t.day, ""); err != nil {
		t.s.logger().Error("give back a claim to its shop's daily cap", "shop", t.shop, "day", t.day, "err", err)
	}
}

// takeShopCap counts the claim id (under the client's key, "" for none) of
// template in its shop's day of now, if the shop has a DailyClaimCap: nil
// if it has none or the claim is a retry the cache has a record of (its
// first try counted, or was refused). ESHOPDAILYCAP if the shop's claims
// of the day reached the cap; ErrNotFound if there is no template.
func (s *Service) takeShopCap(ctx context.Context, template int64, id, key string, day int64) (*shopCapTake, error) {
	if s.Shops == nil {
		return nil, nil
	}
	shop, err := s.shops.of(ctx, s, template)
	if err != nil {
		return nil, err
	}
	limit, err := s.Shops.DailyClaimCap(ctx, shop)
	if err != nil || limit == 0 {
		return nil, err
	}
	if key != "" {
		if _, err := s.Cache.Reservation(ctx, template, id); err == nil {
			return nil, nil
		}
	}
	for attempt := 0; ; attempt++ {
		ok, err := s.Cache.ShopClaimsTake(ctx, shop, day, limit)
		if errors.Is(err, quan.ErrCacheCold) && attempt == 0 {
			if err := s.shops.load.Do(shop, func() error { return s.loadShopClaims(ctx, shop, day) }); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("the daily claim cap of shop %d: %w", shop, err)
		}
		if !ok {
			return nil, quan.Errorf(quan.ESHOPDAILYCAP, "shop %d accepts %d claims a day and has accepted them today (days in Asia/Shanghai time): try again tomorrow", shop, limit)
		}
		return &shopCapTake{s: s, shop: shop, day: day}, nil
	}
}

// loadShopClaims loads the count of shop in day into the cache from the
// store's count of the coupons its claims issued that day.
func (s *Service) loadShopClaims(ctx context.Context, shop, day int64) error {
	n, err := s.Shops.ShopClaimed(ctx, shop, quan.ShanghaiDayStart(day), quan.ShanghaiDayStart(day+1))
	if err != nil {
		return fmt.Errorf("count the claims of shop %d today: %w", shop, err)
	}
	if err := s.Cache.ShopClaimsLoad(ctx, shop, day, n); err != nil {
		return fmt.Errorf("load the daily claim count of shop %d: %w", shop, err)
	}
	if n > 0 {
		s.logger().Info("shop's daily claim count loaded from the store", "shop", shop, "day", day, "claims", n)
	}
	return nil
}

// giveShopCapOf gives back the count of c, a claim that got no coupon
// after it was accepted (failed in the store, dead-lettered, reaped), if
// its shop has a cap.
func (s *Service) giveShopCapOf(ctx context.Context, c *quan.Claim) error {
	if s.Shops == nil {
		return nil
	}
	shop, err := s.shops.of(ctx, s, c.TemplateID)
	if err != nil {
		return err
	}
	limit, err := s.Shops.DailyClaimCap(ctx, shop)
	if err != nil || limit == 0 {
		return err
	}
	if err := s.Cache.ShopClaimsGive(ctx, shop, quan.ShanghaiDay(c.At), c.ID); err != nil {
		return fmt.Errorf("give back claim %s to the daily cap of shop %d: %w", c.ID, shop, err)
	}
	return nil
}

// templateShops keeps the shop of each template a claim named: a
// template's shop never changes, so what is read once holds. A template
// that does not exist is not kept.
type templateShops struct {
	mu   sync.RWMutex
	m    map[int64]int64
	read flight.Group // one store read per template at a time
	load flight.Group // one load of a shop's count at a time
}

// maxTemplateShops bounds templateShops; a sixteenth goes, at random, when
// it is full.
const maxTemplateShops = 100_000

func (t *templateShops) of(ctx context.Context, s *Service, template int64) (int64, error) {
	t.mu.RLock()
	shop, ok := t.m[template]
	t.mu.RUnlock()
	if ok {
		return shop, nil
	}
	err := t.read.Do(template, func() error {
		exists, err := s.mayExist(ctx, template)
		if err != nil {
			return err
		}
		if !exists {
			return quan.Errorf(quan.ENOTFOUND, "template %d not found", template)
		}
		tpl, err := s.Templates.Template(ctx, quan.AnyShop, template)
		if err != nil {
			return err
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.m == nil {
			t.m = map[int64]int64{}
		}
		if len(t.m) >= maxTemplateShops {
			n := maxTemplateShops / 16
			for k := range t.m {
				delete(t.m, k)
				if n--; n == 0 {
					break
				}
			}
		}
		t.m[template] = tpl.ShopNo
		shop = tpl.ShopNo
		return nil
	})
	if err != nil {
		return 0, err
	}
	if shop == 0 {
		// Another caller's read: it is kept now.
		t.mu.RLock()
		shop = t.m[template]
		t.mu.RUnlock()
	}
	return shop, nil
}
