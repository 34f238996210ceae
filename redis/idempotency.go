package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
)

var (
	_ quan.Idempotency = (*Cache)(nil)
	_ quan.RateLimiter = (*Cache)(nil)
)

// runningMark is the value of a key whose request runs.
const runningMark = "running"

func (c *Cache) idemKey(key string) string { return c.prefix + "idem:" + key }

// Begin implements quan.Idempotency: SET NX marks the key running; a key
// there already is running or holds its replay.
func (c *Cache) Begin(ctx context.Context, key string, running time.Duration) (quan.KeyState, *quan.Replay, error) {
	k := c.idemKey(key)
	for range 3 {
		err := c.client.Do(ctx, c.client.B().Set().Key(k).Value(runningMark).Nx().Px(running).Build()).Error()
		if err == nil {
			return quan.KeyNew, nil, nil
		}
		if !rueidis.IsRedisNil(err) {
			return 0, nil, fmt.Errorf("redis idempotency begin: %w", err)
		}
		v, err := c.client.Do(ctx, c.client.B().Get().Key(k).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			continue // expired between the two calls
		}
		if err != nil {
			return 0, nil, fmt.Errorf("redis idempotency begin: %w", err)
		}
		if v == runningMark {
			return quan.KeyRunning, nil, nil
		}
		var r quan.Replay
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return 0, nil, fmt.Errorf("redis idempotency begin: key %q: %w", key, err)
		}
		return quan.KeyDone, &r, nil
	}
	return 0, nil, fmt.Errorf("redis idempotency begin: key %q keeps expiring", key)
}

// Complete implements quan.Idempotency.
func (c *Cache) Complete(ctx context.Context, key string, r quan.Replay, keep time.Duration) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := c.client.Do(ctx, c.client.B().Set().Key(c.idemKey(key)).Value(string(b)).Px(keep).Build()).Error(); err != nil {
		return fmt.Errorf("redis idempotency complete: %w", err)
	}
	return nil
}

// Abort implements quan.Idempotency: it deletes the key only while it
// is marked running.
func (c *Cache) Abort(ctx context.Context, key string) error {
	if err := abortScript.Exec(ctx, c.client, []string{c.idemKey(key)}, []string{runningMark}).Error(); err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("redis idempotency abort: %w", err)
	}
	return nil
}

var abortScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// bucketScript is a token bucket on the server's clock. KEYS bucket;
// ARGV rate (tokens a second), burst. Returns 0 when allowed, else the
// microseconds until a token is there.
var bucketScript = rueidis.NewLuaScript(`
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(b[1]), tonumber(b[2])
if not tokens then tokens, at = burst, now end
tokens = math.min(burst, tokens + (now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) / rate * 1e6) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return wait
`)

// Allow implements quan.RateLimiter with one script call.
func (c *Cache) Allow(ctx context.Context, key string, rate float64, burst int) (bool, time.Duration, error) {
	wait, err := bucketScript.Exec(ctx, c.client, []string{c.prefix + "rate:" + key},
		[]string{strconv.FormatFloat(rate, 'g', -1, 64), strconv.Itoa(burst)}).AsInt64()
	if err != nil {
		return false, 0, fmt.Errorf("redis rate limit: %w", err)
	}
	return wait == 0, time.Duration(wait) * time.Microsecond, nil
}
