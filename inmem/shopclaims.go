package inmem

import (
	"context"

	"github.com/quanhq/quan"
)

// shopDay names the count of a shop's claims in a Shanghai day.
type shopDay struct{ shop, day int64 }

// shopCount is the count of one shop's day and the claims given back
// under a key.
type shopCount struct {
	n     int64
	given map[string]struct{}
}

// shopCounts are the counts of the shops' daily claim caps, under their
// own lock: a cap spans templates, so no template's lock serves.
type shopCounts struct {
	m map[shopDay]*shopCount
}

// ShopClaimsTake implements quan.Cache.
func (c *Cache) ShopClaimsTake(ctx context.Context, shop, day, limit int64) (bool, error) {
	c.shopMu.Lock()
	defer c.shopMu.Unlock()
	n := c.shops.m[shopDay{shop, day}]
	if n == nil {
		return false, quan.ErrCacheCold
	}
	if n.n >= limit {
		return false, nil
	}
	n.n++
	return true, nil
}

// ShopClaimsLoad implements quan.Cache. It drops the counts of days
// before day-1: a process keeps two days of counts, as Redis does.
func (c *Cache) ShopClaimsLoad(ctx context.Context, shop, day, n int64) error {
	c.shopMu.Lock()
	defer c.shopMu.Unlock()
	if c.shops.m == nil {
		c.shops.m = map[shopDay]*shopCount{}
	}
	k := shopDay{shop, day}
	if c.shops.m[k] != nil {
		return nil
	}
	for o := range c.shops.m {
		if o.day < day-1 {
			delete(c.shops.m, o)
		}
	}
	c.shops.m[k] = &shopCount{n: max(n, 0)}
	return nil
}

// ShopClaimsGive implements quan.Cache.
func (c *Cache) ShopClaimsGive(ctx context.Context, shop, day int64, key string) error {
	c.shopMu.Lock()
	defer c.shopMu.Unlock()
	n := c.shops.m[shopDay{shop, day}]
	if n == nil {
		return nil
	}
	if key != "" {
		if _, ok := n.given[key]; ok {
			return nil
		}
		if n.given == nil {
			n.given = map[string]struct{}{}
		}
		n.given[key] = struct{}{}
	}
	if n.n > 0 {
		n.n--
	}
	return nil
}
