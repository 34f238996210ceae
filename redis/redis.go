// Package redis holds quan's production cache: the hot-path state of
// issuing in Redis, reserved by one Lua script call per batch.
//
// Key layout, under the prefix given to Open, per template ID:
//
//	{t:ID}:s        hash: the state snapshot, stock and the generation Prime set
//	{t:ID}:u        hash: user ID → coupons held
//	{t:ID}:k:KEY    string "gen|outcomes|users": what Reserve under KEY did (the
//	                generation, an outcome a user, the users reserved, comma
//	                separated); expires after KeyTTL
//	{t:ID}:p:GEN    hash: counts Prime is writing, renamed to {t:ID}:u when whole
//
// The {t:ID} hash tag keeps a template's keys on one cluster slot, so each
// script may touch all of them.
//
// A shop's daily claim counts are under a hash tag of their own, {s:SHOP}
// (see shopclaims.go).
package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/batch"
)

// KeyTTL is how long Redis keeps a Reserve key record.
const KeyTTL = 24 * time.Hour

var _ quan.SharedCache = (*Cache)(nil)

// Cache is a quan.Cache on Redis. It is safe for concurrent use; calls
// from many goroutines share a few connections and are pipelined.
type Cache struct {
	client rueidis.Client
	prefix string
	once   sync.Once
	// claims gathers concurrent ReserveLimited calls (see there).
	claims     *batch.Batcher[claimReq, claimRes]
	claimsOnce sync.Once
}

// Open connects to the Redis at url (redis://[user:pass@]host:port/db,
// rediss:// for TLS) and returns a cache whose keys all start with
// prefix. The prefix must not contain braces: the hash tags are the
// adapter's.
func Open(ctx context.Context, url, prefix string) (*Cache, error) {
	if strings.ContainsAny(prefix, "{}") {
		return nil, quan.Errorf(quan.EINVALID, "redis key prefix %q must not contain braces", prefix)
	}
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("open redis cache: %w", err)
	}
	opt.DisableCache = true // no client-side caching: every read must see the server
	opt.RetryDelay = retryDelay
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("open redis cache: %w", err)
	}
	if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		return nil, fmt.Errorf("open redis cache: ping: %w", err)
	}
	return &Cache{client: client, prefix: prefix}, nil
}

// retryDelay is how long the client waits before it sends a read-only
// command again after a network error: 1 ms, doubling to 250 ms, and no
// more tries after about a second. The client's own default retries until
// the caller's context ends, and a request without a deadline would hang
// on a Redis that is down instead of failing unavailable.
func retryDelay(attempts int, _ rueidis.Completed, _ error) time.Duration {
	if attempts >= 10 {
		return -1
	}
	return min(time.Millisecond<<attempts, 250*time.Millisecond)
}

// Drop deletes every key under the cache's prefix: all the cache holds,
// as a Redis restart loses it. For tests, and for retiring a prefix.
func (c *Cache) Drop(ctx context.Context) (err error) {
	defer c.unavailable(&err)
	return c.deleteKeys(ctx, func(string) bool { return true })
}

// deleteKeys deletes the keys of c's prefix that del accepts, by SCAN and
// DEL.
func (c *Cache) deleteKeys(ctx context.Context, del func(key string) bool) error {
	var cursor uint64
	for {
		e, err := c.client.Do(ctx, c.client.B().Scan().Cursor(cursor).Match(c.prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return fmt.Errorf("redis: delete the keys of %q: %w", c.prefix, err)
		}
		var cmds []rueidis.Completed
		for _, k := range e.Elements {
			if del(k) { // one DEL a key: in a cluster the keys may be on any slot
				cmds = append(cmds, c.client.B().Del().Key(k).Build())
			}
		}
		for _, r := range c.client.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return fmt.Errorf("redis: delete the keys of %q: %w", c.prefix, err)
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// Close closes the connections. It is safe to call twice.
func (c *Cache) Close() error {
	c.once.Do(c.client.Close)
	return nil
}

// keys names the keys of one template.
type keys struct{ base string }

func (c *Cache) keys(template int64) keys {
	return keys{c.prefix + "{t:" + strconv.FormatInt(template, 10) + "}:"}
}

func (k keys) state() string            { return k.base + "s" }
func (k keys) users() string            { return k.base + "u" }
func (k keys) record(key string) string { return k.base + "k:" + key }
func (k keys) temp(gen string) string   { return k.base + "p:" + gen }
func (k keys) ledger() string           { return k.base + "q" }
func (k keys) reaping() string          { return k.base + "r" }

// day and week are the hashes of the users' period counts, as reserveLua
// names them (periodKeys).
func (k keys) day(day int64) string   { return k.users() + ":d:" + strconv.FormatInt(day, 10) }
func (k keys) week(week int64) string { return k.users() + ":w:" + strconv.FormatInt(week, 10) }

// ledgers is the set of the state keys of templates with a claim ledger
// (quan.ClaimLedger).
func (c *Cache) ledgers() string { return c.prefix + "ledgers" }

// Ping checks that Redis answers, for readiness probes.
func (c *Cache) Ping(ctx context.Context) (err error) {
	defer c.unavailable(&err)
	if err := c.client.Do(ctx, c.client.B().Ping().Build()).Error(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}
