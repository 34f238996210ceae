package redis

import (
	"context"
	"fmt"
	"iter"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
)

// holdingsScan is how many users one HSCAN of Holdings asks for.
const holdingsScan = 1000

// Holdings implements quan.Cache by HSCAN of the user counts, after
// checking that the template is loaded.
func (c *Cache) Holdings(ctx context.Context, template int64) iter.Seq2[quan.Holding, error] {
	return unavailableSeq(c.scanCounts(ctx, template, c.keys(template).users()))
}

// PeriodHoldings implements quan.Cache by HSCAN of the period's counts
// (keys.day, keys.week), after checking that the template is loaded.
func (c *Cache) PeriodHoldings(ctx context.Context, template int64, p quan.Period) iter.Seq2[quan.Holding, error] {
	return unavailableSeq(c.scanCounts(ctx, template, c.periodKey(template, p)))
}

// periodKey is the hash of the counts of template in p.
func (c *Cache) periodKey(template int64, p quan.Period) string {
	if p.Week {
		return c.keys(template).week(p.N)
	}
	return c.keys(template).day(p.N)
}

// scanCounts streams the counts above zero of the hash counts of
// template, ErrCacheCold if the template is not loaded.
func (c *Cache) scanCounts(ctx context.Context, template int64, counts string) iter.Seq2[quan.Holding, error] {
	return func(yield func(quan.Holding, error) bool) {
		k := c.keys(template)
		n, err := c.client.Do(ctx, c.client.B().Exists().Key(k.state()).Build()).AsInt64()
		if err != nil {
			yield(quan.Holding{}, fmt.Errorf("redis holdings of template %d: %w", template, err))
			return
		}
		if n == 0 {
			yield(quan.Holding{}, quan.ErrCacheCold)
			return
		}
		var cursor uint64
		for {
			e, err := c.client.Do(ctx, c.client.B().Hscan().Key(counts).Cursor(cursor).Count(holdingsScan).Build()).AsScanEntry()
			if err != nil {
				yield(quan.Holding{}, fmt.Errorf("redis holdings of template %d: %w", template, err))
				return
			}
			for i := 0; i+1 < len(e.Elements); i += 2 {
				u, err1 := strconv.ParseInt(e.Elements[i], 10, 64)
				n, err2 := strconv.ParseInt(e.Elements[i+1], 10, 64)
				if err1 != nil || err2 != nil {
					yield(quan.Holding{}, fmt.Errorf("redis holdings of template %d: bad entry %q=%q", template, e.Elements[i], e.Elements[i+1]))
					return
				}
				if n > 0 && !yield(quan.Holding{UserID: u, Count: n}, nil) {
					return
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				return
			}
		}
	}
}

// SwapStock implements quan.Cache with one script call.
func (c *Cache) SwapStock(ctx context.Context, template, old, stock int64) (_ bool, err error) {
	defer c.unavailable(&err)
	n, err := swapStockScript.Exec(ctx, c.client, []string{c.keys(template).state()},
		[]string{strconv.FormatInt(old, 10), strconv.FormatInt(stock, 10)}).AsInt64()
	if rueidis.IsRedisNil(err) {
		return false, quan.ErrCacheCold
	}
	if err != nil {
		return false, fmt.Errorf("redis swap the stock of template %d: %w", template, err)
	}
	return n == 1, nil
}

// maxHeldSwaps bounds the swaps one script call of SwapHeld carries.
const maxHeldSwaps = 1000

// SwapHeld implements quan.Cache: one script call a thousand swaps.
func (c *Cache) SwapHeld(ctx context.Context, template int64, swaps []quan.HeldSwap) (_ int, err error) {
	defer c.unavailable(&err)
	return c.swapCounts(ctx, template, c.keys(template).users(), 0, swaps)
}

// The lifetimes reserveLua gives the period counts' hashes (a day's
// serve the Release of its reservations, a week's its reservations).
const (
	dayTTL  = 172800 // s: two days
	weekTTL = 691200 // s: eight days
)

// SwapPeriodHeld implements quan.Cache: SwapHeld of the period's hash,
// which keeps reserveLua's lifetime (or gets it, when a swap makes it).
func (c *Cache) SwapPeriodHeld(ctx context.Context, template int64, p quan.Period, swaps []quan.HeldSwap) (_ int, err error) {
	defer c.unavailable(&err)
	ttl := int64(dayTTL)
	if p.Week {
		ttl = weekTTL
	}
	return c.swapCounts(ctx, template, c.periodKey(template, p), ttl, swaps)
}

// swapCounts makes swaps in the hash counts of template, one script call a
// thousand, giving the hash a lifetime of ttl seconds if it has none (0:
// it keeps none).
func (c *Cache) swapCounts(ctx context.Context, template int64, counts string, ttl int64, swaps []quan.HeldSwap) (int, error) {
	k := c.keys(template)
	done := 0
	for len(swaps) > 0 {
		part := swaps[:min(len(swaps), maxHeldSwaps)]
		swaps = swaps[len(part):]
		args := make([]string, 0, 1+3*len(part))
		args = append(args, strconv.FormatInt(ttl, 10))
		for _, s := range part {
			args = append(args, strconv.FormatInt(s.UserID, 10), strconv.FormatInt(s.Old, 10), strconv.FormatInt(s.Count, 10))
		}
		n, err := swapHeldScript.Exec(ctx, c.client, []string{k.state(), counts}, args).AsInt64()
		if rueidis.IsRedisNil(err) {
			return done, quan.ErrCacheCold
		}
		if err != nil {
			return done, fmt.Errorf("redis swap the counts of template %d: %w", template, err)
		}
		done += int(n)
	}
	return done, nil
}

// Unhanded implements quan.ClaimLedger.
func (c *Cache) Unhanded(ctx context.Context, template int64) (_ int64, err error) {
	defer c.unavailable(&err)
	k := c.keys(template)
	res := c.client.DoMulti(ctx,
		c.client.B().Zcard().Key(k.ledger()).Build(),
		c.client.B().Zcard().Key(k.reaping()).Build())
	var n int64
	for _, r := range res {
		v, err := r.AsInt64()
		if err != nil {
			return 0, fmt.Errorf("redis claims not handed off of template %d: %w", template, err)
		}
		n += v
	}
	return n, nil
}

// swapStockScript: KEYS state; ARGV old, new. nil when cold, 1 if the
// stock was old and is now new, else 0.
var swapStockScript = rueidis.NewLuaScript(`
local s = redis.call('HGET', KEYS[1], 'stock')
if not s then return false end
if tonumber(s) ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'stock', ARGV[2])
return 1
`)

// swapHeldScript: KEYS state, counts; ARGV ttl, then user, old, new
// triples. nil when cold, else how many counts were old and are now new
// (a count of 0 or less is removed: no entry is a count of 0). counts
// gets a lifetime of ttl seconds if it has none and ttl is above 0.
var swapHeldScript = rueidis.NewLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local n = 0
for i = 2, #ARGV, 3 do
  local cur = tonumber(redis.call('HGET', KEYS[2], ARGV[i]) or '0')
  if cur < 0 then cur = 0 end
  if cur == tonumber(ARGV[i + 1]) then
    if tonumber(ARGV[i + 2]) > 0 then redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
    else redis.call('HDEL', KEYS[2], ARGV[i]) end
    n = n + 1
  end
end
if tonumber(ARGV[1]) > 0 and redis.call('TTL', KEYS[2]) == -1 then
  redis.call('EXPIRE', KEYS[2], ARGV[1])
end
return n
`)
