package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
)

var (
	_ quan.Idempotency     = (*Cache)(nil)
	_ quan.RateLimiter     = (*Cache)(nil)
	_ quan.LimitedReserver = (*Cache)(nil)
)

// runningMark is the value of a key whose request runs.
const runningMark = "running"

func (c *Cache) idemKey(key string) string { return c.prefix + "idem:" + key }

// Begin implements quan.Idempotency: SET NX marks the key running; a key
// there already is running or holds its replay.
func (c *Cache) Begin(ctx context.Context, key string, running time.Duration) (_ quan.KeyState, _ *quan.Replay, err error) {
	defer c.unavailable(&err)
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
func (c *Cache) Complete(ctx context.Context, key string, r quan.Replay, keep time.Duration) (err error) {
	defer c.unavailable(&err)
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
func (c *Cache) Abort(ctx context.Context, key string) (err error) {
	defer c.unavailable(&err)
	if err := abortScript.Exec(ctx, c.client, []string{c.idemKey(key)}, []string{runningMark}).Error(); err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("redis idempotency abort: %w", err)
	}
	return nil
}

var abortScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Rate limits: a bucket is the string "tokens at" at PREFIX rate:KEY, on the
// server's clock, expiring once it would be full again (a missing bucket
// is a full one).
//
// One Allow is one round trip whatever the number of buckets. On a single
// Redis (or a sentinel's master) it is one call of allowScript with every
// bucket: atomic, all or none. In a cluster the buckets of one call are on
// different slots (a claim's user bucket is global to the user, its
// template bucket to the template: no hash tag can join them without
// making the user's limit per template), and a script may touch one slot
// only. There allowEach pipelines one allowScript call per bucket
// (DoMulti) and, when one refuses, gives back the tokens the others took
// in a second round trip. Between the two a concurrent call may be
// refused by a bucket whose token is on its way back: the limits never let
// more through than they allow, but may briefly let fewer. A check-then-take
// in two round trips would pay the second on every call, and still race.
//
// Measured with BenchmarkAllow (a claim's two buckets, 128 goroutines,
// local Redis sharing 2 busy cores with the client, 4 runs): one script
// 19-29µs an Allow, the pipelined pair 24-32µs, and the two calls one
// after the other that a claim made before 34-36µs. The single script is
// some 10-20% cheaper than the pair, so it is used wherever the slots
// allow it.

// bucketLua defines the rate limit of allowScript, refundScript and
// claimsScript:
//
//   - now(): the server's clock in seconds.
//   - bucket(k, burst, t): the bucket at k as a table {n, at}, read once a
//     script; a missing bucket is a full one. A bucket is the string
//     "tokens at", expiring once it would be full again.
//   - take(list, t): takes a token from each bucket of list, entries {key,
//     rate, burst}, all or none, at t. Returns 0, 0 when it took them,
//     else i, wait: the i-th bucket is the one without a token that
//     waits longest, wait microseconds. A refusal takes nothing. A bucket
//     the script has not seen yet is first created full less the token
//     (SET NX), which for a new user is the one write it needs; if it was
//     there, it is read, and if the take is refused, the bucket created is
//     deleted again. A bucket made so is held as MADE, no table, until the
//     script meets it again (a claim's new user costs no table).
//   - flushBuckets(): writes the buckets taken from since they were
//     read, once each, at the end of the script.
//
// A bucket so slow that it would be full again only after 31 years
// expires then; a wait is at most 9e15 microseconds (285 years), about
// the longest time.Duration.
const bucketLua = `
local rcall, min, max, ceil = redis.call, math.min, math.max, math.ceil
local MADE = true
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1e6
end
local fmtN, fmtAt, ttls = {}, {}, {}
local function bucketValue(n, at)
  local sn, sa = fmtN[n], fmtAt[at]
  if not sn then
    sn = string.format('%.17g', n)
    fmtN[n] = sn
  end
  if not sa then
    sa = string.format('%.6f', at)
    fmtAt[at] = sa
  end
  return sn .. ' ' .. sa
end
local function bucketTTL(rate, burst)
  local r = ttls[rate]
  if not r then
    r = {}
    ttls[rate] = r
  end
  local v = r[burst]
  if not v then
    v = string.format('%d', min(ceil(burst / rate * 1000) + 1000, 1e12))
    r[burst] = v
  end
  return v
end
local buckets = {}
local function bucket(k, burst, t)
  local b = buckets[k]
  if b and b ~= MADE then return b end
  local v, n, at = rcall('GET', k), nil, nil
  if v then
    local i = string.find(v, ' ', 1, true)
    n, at = tonumber(string.sub(v, 1, i - 1)), tonumber(string.sub(v, i + 1))
  end
  if not n then n, at = burst, t end
  -- Every field a bucket gets, from the start: a Lua table that gains
  -- fields later is rebuilt.
  b = {n = n, at = at, rate = false, burst = false, dirty = false}
  buckets[k] = b
  return b
end
-- take's scratch tables, reused by each call.
local takeGot, takeMade = {}, {}
local function take(list, t)
  local refused, wait, got, made, nmade = 0, 0, takeGot, takeMade, 0
  for i = 1, #list do
    local e = list[i]
    local k, rate, burst = e[1], e[2], e[3]
    local b = buckets[k]
    local n
    if b == nil and rcall('SET', k, bucketValue(burst - 1, t), 'PX', bucketTTL(rate, burst), 'NX') then
      -- Made full less this take: MADE until the script meets it again.
      buckets[k] = MADE
      nmade = nmade + 1
      made[nmade] = k
      n = burst
    else
      if b == MADE then
        b = {n = burst - 1, at = t, rate = rate, burst = burst, dirty = false}
        buckets[k] = b
      end
      b = b or bucket(k, burst, t)
      n = min(burst, b.n + max(0, t - b.at) * rate)
    end
    got[i] = n
    if n < 1 then
      local w = min(ceil((1 - n) / rate * 1e6), 9e15)
      if w > wait then refused, wait = i, w end
    end
  end
  if refused > 0 then
    for j = 1, nmade do
      local k = made[j]
      rcall('DEL', k)
      buckets[k] = nil
    end
    return refused, wait
  end
  for i = 1, #list do
    local e = list[i]
    local b = buckets[e[1]]
    -- A bucket just made holds this very take already.
    if b ~= MADE then
      b.n, b.at, b.rate, b.burst, b.dirty = got[i] - 1, t, e[2], e[3], true
    end
  end
  return 0, 0
end
local function flushBuckets()
  for k, b in pairs(buckets) do
    if b ~= MADE and b.dirty then
      rcall('SET', k, bucketValue(b.n, b.at), 'PX', bucketTTL(b.rate, b.burst))
    end
  end
end
`

// allowScript takes a token from each bucket of KEYS (bucketLua), ARGV
// holding rate and burst for each key in turn. Returns {0, 0} when it
// took them, else {i, wait}.
var allowScript, allowSHA = luaScript(bucketLua + `
local list = {}
for i = 1, #KEYS do list[i] = {KEYS[i], tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])} end
local refused, wait = take(list, now())
flushBuckets()
return {refused, wait}
`)

// peekScript answers how many microseconds KEYS[1] takes to hold a
// token, 0 if it holds one, changing nothing. ARGV rate, burst.
var peekScript, _ = luaScript(bucketLua + `
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = now()
local b = bucket(KEYS[1], burst, t)
local n = min(burst, b.n + max(0, t - b.at) * rate)
if n >= 1 then return 0 end
return min(ceil((1 - n) / rate * 1e6), 9e15)
`)

// refundScript gives back the token allowScript took from KEYS[1], up to
// the burst. ARGV rate, burst.
var refundScript, refundSHA = luaScript(bucketLua + `
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local t = now()
local b = bucket(KEYS[1], burst, t)
b.n, b.at, b.rate, b.burst, b.dirty = math.min(burst, b.n + math.max(0, t - b.at) * rate + 1), t, rate, burst, true
flushBuckets()
return 1
`)

// luaScript returns a script for Exec and its SHA-1 for EVALSHA in a
// pipeline: rueidis.Lua's ExecMulti loads the script on every node first,
// each time.
func luaScript(src string) (*rueidis.Lua, string) {
	sum := sha1.Sum([]byte(src))
	return rueidis.NewLuaScript(src), hex.EncodeToString(sum[:])
}

// execEach runs script once for each of calls in one pipeline, and again
// by Exec (which loads it) the calls Redis did not know it for.
func (c *Cache) execEach(ctx context.Context, script *rueidis.Lua, sha string, calls []rueidis.LuaExec) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, e := range calls {
		cmds[i] = c.client.B().Evalsha().Sha1(sha).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
	}
	res := c.client.DoMulti(ctx, cmds...)
	for i, r := range res {
		if err, ok := rueidis.IsRedisErr(r.Error()); ok && err.IsNoScript() {
			res[i] = script.Exec(ctx, c.client, calls[i].Keys, calls[i].Args)
		}
	}
	return res
}

func (c *Cache) rateKey(key string) string { return c.prefix + "rate:" + key }

func bucketArgs(b quan.Bucket) (rate, burst string) {
	return strconv.FormatFloat(b.Rate, 'g', -1, 64), strconv.Itoa(b.Burst)
}

// Allow implements quan.RateLimiter in one round trip: one script call
// for all the buckets, or in a cluster one a bucket (see allowScript).
func (c *Cache) Allow(ctx context.Context, buckets ...quan.Bucket) (_ int, _ time.Duration, err error) {
	defer c.unavailable(&err)
	switch {
	case len(buckets) == 0:
		return -1, 0, nil
	case len(buckets) > 1 && c.client.Mode() == rueidis.ClientModeCluster:
		return c.allowEach(ctx, buckets)
	}
	keys, args := make([]string, len(buckets)), make([]string, 0, 2*len(buckets))
	for i, b := range buckets {
		keys[i] = c.rateKey(b.Key)
		rate, burst := bucketArgs(b)
		args = append(args, rate, burst)
	}
	refused, wait, err := allowResult(allowScript.Exec(ctx, c.client, keys, args))
	if err != nil {
		return -1, 0, fmt.Errorf("redis rate limit: %w", err)
	}
	return refused, wait, nil
}

// Peek implements quan.RateLimiter in one script call, which writes
// nothing.
func (c *Cache) Peek(ctx context.Context, b quan.Bucket) (_ time.Duration, err error) {
	defer c.unavailable(&err)
	rate, burst := bucketArgs(b)
	n, err := peekScript.Exec(ctx, c.client, []string{c.rateKey(b.Key)}, []string{rate, burst}).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("redis rate limit: %w", err)
	}
	return micros(n), nil
}

// allowResult reads what allowScript answered: the index of the bucket
// that refused (-1 for none) and its wait.
func allowResult(r rueidis.RedisResult) (int, time.Duration, error) {
	v, err := r.ToArray()
	if err != nil {
		return -1, 0, err
	}
	if len(v) != 2 {
		return -1, 0, fmt.Errorf("rate limit script answered %d values, want 2", len(v))
	}
	return takeResult(v)
}

// takeResult reads take's answer in the first two values of v.
func takeResult(v []rueidis.RedisMessage) (int, time.Duration, error) {
	i, err := v[0].AsInt64()
	if err != nil {
		return -1, 0, err
	}
	wait, err := v[1].AsInt64()
	if err != nil {
		return -1, 0, err
	}
	return int(i) - 1, micros(wait), nil
}

// micros is a wait of n microseconds, the longest Duration if it is
// longer (a bucket refilled at a rate below one token in 290 years).
func micros(n int64) time.Duration {
	if n > int64(math.MaxInt64/time.Microsecond) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Microsecond
}

// allowEach is Allow for buckets on different cluster slots: one
// allowScript call a bucket in one pipeline, then the tokens taken given
// back if a bucket refused or a call failed.
func (c *Cache) allowEach(ctx context.Context, buckets []quan.Bucket) (int, time.Duration, error) {
	calls := c.bucketCalls(buckets)
	refused, wait := -1, time.Duration(0)
	var errs []error
	var back []rueidis.LuaExec
	for i, r := range c.execEach(ctx, allowScript, allowSHA, calls) {
		no, w, err := allowResult(r)
		switch {
		case err != nil:
			// It may have taken the token all the same (a reply lost): it
			// stays taken, as giving back one not taken would let more
			// through than the limit.
			errs = append(errs, err)
		case no < 0:
			back = append(back, calls[i])
		case refused < 0 || w > wait:
			refused, wait = i, w
		}
	}
	if refused < 0 && errs == nil {
		return -1, 0, nil
	}
	errs = append(errs, c.refund(ctx, back)...)
	if errs != nil {
		return -1, 0, fmt.Errorf("redis rate limit: %w", errors.Join(errs...))
	}
	return refused, wait, nil
}

// bucketCalls are the calls of allowScript, or of refundScript, one a
// bucket.
func (c *Cache) bucketCalls(buckets []quan.Bucket) []rueidis.LuaExec {
	calls := make([]rueidis.LuaExec, len(buckets))
	for i, b := range buckets {
		rate, burst := bucketArgs(b)
		calls[i] = rueidis.LuaExec{Keys: []string{c.rateKey(b.Key)}, Args: []string{rate, burst}}
	}
	return calls
}

// refund gives back the tokens that the calls of allowScript in back
// took, in one pipeline, even if ctx is cancelled.
func (c *Cache) refund(ctx context.Context, back []rueidis.LuaExec) []error {
	var errs []error
	for _, r := range c.execEach(context.WithoutCancel(ctx), refundScript, refundSHA, back) {
		if err := r.Error(); err != nil {
			errs = append(errs, fmt.Errorf("give a token back: %w", err))
		}
	}
	return errs
}
