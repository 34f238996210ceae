package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
)

// The counts of the shops' daily claim caps (quan.Cache.ShopClaimsTake),
// under the prefix, per shop and Shanghai day:
//
//	{s:SHOP}:c:DAY   string: the shop's claims counted that day
//	{s:SHOP}:g:DAY   set: the claim ids given back that day
//
// A shop's keys share the hash tag {s:SHOP}, apart from every template's:
// a cap spans the shop's templates, whose keys are each on their own slot.
// Both keys expire shopCountTTL after the count is loaded.

// shopCountTTL is how long a shop's count of a day is kept from its load:
// the day, and the give-backs of claims decided after it.
const shopCountTTL = 48 * time.Hour

func (c *Cache) shopKeys(shop, day int64) (count, given string) {
	base := c.prefix + "{s:" + strconv.FormatInt(shop, 10) + "}:"
	d := strconv.FormatInt(day, 10)
	return base + "c:" + d, base + "g:" + d
}

// shopTakeScript: KEYS count; ARGV limit. Returns -1 when there is no
// count, 0 at the limit, else 1 after adding one.
var shopTakeScript = rueidis.NewLuaScript(`
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
if tonumber(v) >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
return 1
`)

// shopGiveScript: KEYS count, given; ARGV key ("" for none), TTL seconds.
// Takes one off a count above zero, once per key; nothing without a count.
var shopGiveScript = rueidis.NewLuaScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if ARGV[1] ~= '' then
  if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
if tonumber(v) > 0 then redis.call('DECR', KEYS[1]) end
return 1
`)

// ShopClaimsTake implements quan.Cache with one script call.
func (c *Cache) ShopClaimsTake(ctx context.Context, shop, day, limit int64) (_ bool, err error) {
	defer c.unavailable(&err)
	count, _ := c.shopKeys(shop, day)
	n, err := shopTakeScript.Exec(ctx, c.client, []string{count}, []string{strconv.FormatInt(limit, 10)}).AsInt64()
	if err != nil {
		return false, fmt.Errorf("redis take a shop's daily claim: %w", err)
	}
	if n < 0 {
		return false, quan.ErrCacheCold
	}
	return n == 1, nil
}

// ShopClaimsLoad implements quan.Cache by SET NX with the count's expiry.
func (c *Cache) ShopClaimsLoad(ctx context.Context, shop, day, n int64) (err error) {
	defer c.unavailable(&err)
	count, _ := c.shopKeys(shop, day)
	err = c.client.Do(ctx, c.client.B().Set().Key(count).Value(strconv.FormatInt(max(n, 0), 10)).Nx().
		Ex(shopCountTTL).Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) { // nil: a count was there
		return fmt.Errorf("redis load a shop's daily claims: %w", err)
	}
	return nil
}

// ShopClaimsGive implements quan.Cache with one script call.
func (c *Cache) ShopClaimsGive(ctx context.Context, shop, day int64, key string) (err error) {
	defer c.unavailable(&err)
	count, given := c.shopKeys(shop, day)
	ttl := strconv.FormatInt(int64(shopCountTTL/time.Second), 10)
	if err := shopGiveScript.Exec(ctx, c.client, []string{count, given}, []string{key, ttl}).Error(); err != nil {
		return fmt.Errorf("redis give back a shop's daily claim: %w", err)
	}
	return nil
}
