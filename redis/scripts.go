package redis

import "github.com/redis/rueidis"

// The scripts keep each operation atomic on the server: one call per
// Reserve batch, per Release, per Update and per Prime swap. Every key a
// script touches carries the template's hash tag, so in a cluster they
// share a slot; reserveLimitedScript alone also touches rate buckets, and
// so runs only off a cluster.
//
// The state hash holds: gen (set by Prime), shop, status, ss/sn and es/en
// (issue start and end as Unix seconds and nanoseconds: Lua numbers are
// doubles, exact for seconds but not for nanoseconds since 1970), limit,
// daily and weekly (the period limits, 0 or missing for none) and stock.
// A key record holds: g (the gen it was made under), o (one outcome
// character per user), r (the users it reserved, comma separated; emptied
// by Release) and, for a template with period limits, the Shanghai day
// its reservations count in. The period counts of a template are hashes
// of user counts a day (users key ":d:" day) and a week (":w:" week),
// touched only when a period limit is set: by the reservations, and by a
// Prime or Load whose holdings carry the counts of a day and its week.

// reserveLua defines, for the scripts that reserve and release:
//
//   - recGet(k): the key record at k as gen, outcomes, users (comma
//     separated), nil if there is none. A record is the string
//     "gen|outcomes|users".
//   - state(k): the state hash at k read once a script, as a table with
//     the stock counted down by the reservations of the script; false
//     when cold. flushStates() writes the stock taken, one HINCRBY a
//     template, at the end of the script.
//   - reserve(st, uk, rk, s, ns, ttl, users, fresh): reserves one coupon
//     for each of users (strings) against st, the user counts in hash uk
//     and the record at rk, at s seconds and ns nanoseconds (a number or
//     its string, read only in the second the window starts or ends);
//     returns the outcome characters. A record of st's generation is
//     returned as it is: the key was reserved before. A user's count is
//     incremented and, above the limit, decremented back: one call for a
//     reservation, two for a refusal. With fresh (a key expected to be
//     new: a claim's) the record is not read first: it is written if
//     absent (SET NX), and only if it was there already is it read, and
//     the reservation just made undone when the record is of st's
//     generation. A claim's one user makes no table. It returns the
//     outcome characters and, for a reservation made anew (not a key's
//     record returned), how many users it reserved for.
//
// The scripts keep what a claim costs in Lua small: the numbers and
// strings every claim of a call shares are parsed and formatted once (a
// number handed to redis.call is formatted with sprintf each time),
// scratch tables are reused, tables get all their fields at once.
//
// A script call holds the reservations of one template, and reads its
// state before it writes anything: a state key of the wrong type fails the
// call before any write.
const reserveLua = `
local rcall = redis.call
local function recGet(k)
  local v = rcall('GET', k)
  if not v then return nil end
  local a = string.find(v, '|', 1, true)
  local b = string.find(v, '|', a + 1, true)
  local c = string.find(v, '|', b + 1, true)
  if c then
    return string.sub(v, 1, a - 1), string.sub(v, a + 1, b - 1), string.sub(v, b + 1, c - 1), tonumber(string.sub(v, c + 1))
  end
  return string.sub(v, 1, a - 1), string.sub(v, a + 1, b - 1), string.sub(v, b + 1)
end
-- periodKeys(uk, day): the hashes of the users' counts in a Shanghai day
-- and in its week (weeks from Monday: 1970-01-01 was a Thursday).
local function periodKeys(uk, day)
  return uk .. ':d:' .. day, uk .. ':w:' .. math.floor((day + 3) / 7)
end
local function periodBack(st, u)
  if rcall('HINCRBY', st.dk, u, '-1') <= 0 then rcall('HDEL', st.dk, u) end
  if rcall('HINCRBY', st.wk, u, '-1') <= 0 then rcall('HDEL', st.wk, u) end
end
local states = {}
local function state(k)
  local st = states[k]
  if st == nil then
    local v = rcall('HMGET', k, 'gen', 'status', 'ss', 'sn', 'es', 'en', 'limit', 'stock', 'daily', 'weekly')
    st = false
    if v[1] then
      st = {gen = v[1], status = v[2], ss = tonumber(v[3]), sn = tonumber(v[4]), es = tonumber(v[5]),
        en = tonumber(v[6]), limit = tonumber(v[7]), stock = tonumber(v[8]), took = 0,
        daily = tonumber(v[9] or '0'), weekly = tonumber(v[10] or '0')}
      st.periodic = st.daily > 0 or st.weekly > 0
    end
    states[k] = st
  end
  return st
end
local function flushStates()
  for k, st in pairs(states) do
    if st and st.took > 0 then rcall('HINCRBY', k, 'stock', -st.took) end
  end
end
-- periodFull: 'd' or 'w' when u received the daily or weekly limit in
-- st's day and week (st.dk, st.wk), else false.
local function periodFull(st, u)
  if st.daily > 0 and tonumber(rcall('HGET', st.dk, u) or '0') >= st.daily then return 'd' end
  if st.weekly > 0 and tonumber(rcall('HGET', st.wk, u) or '0') >= st.weekly then return 'w' end
  return false
end
local function outcome(st, uk, u, all)
  if all then return all end
  if st.stock <= 0 then
    if tonumber(rcall('HGET', uk, u) or '0') >= st.limit then return 'l' end
    if st.periodic then
      local p = periodFull(st, u)
      if p then return p end
    end
    return 's'
  end
  if rcall('HINCRBY', uk, u, '1') > st.limit then
    rcall('HINCRBY', uk, u, '-1')
    return 'l'
  end
  if st.periodic then
    local p = periodFull(st, u)
    if p then
      if rcall('HINCRBY', uk, u, '-1') <= 0 then rcall('HDEL', uk, u) end
      return p
    end
    rcall('HINCRBY', st.dk, u, '1')
    rcall('HINCRBY', st.wk, u, '1')
    if not st.expiring then
      -- A day's counts serve the Release of its reservations, a week's
      -- its reservations: two days and eight days are enough.
      rcall('EXPIRE', st.dk, 172800)
      rcall('EXPIRE', st.wk, 691200)
      st.expiring = true
    end
  end
  st.stock, st.took = st.stock - 1, st.took + 1
  return '-'
end
local function reserve(st, uk, rk, s, ns, ttl, users, fresh)
  if not fresh then
    local g, o = recGet(rk)
    if g == st.gen then return o end
  end
  local all = false
  local suffix = ''
  if st.periodic then
    local day = math.floor((s + 28800) / 86400)
    st.dk, st.wk = periodKeys(uk, day)
    suffix = '|' .. day
  end
  if st.status ~= 'active' then all = 'i'
  elseif s < st.ss or (s == st.ss and tonumber(ns) < st.sn) then all = 'n'
  elseif s > st.es or (s == st.es and tonumber(ns) >= st.en) then all = 'e'
  end
  -- o: the outcomes; got: the users reserved for, comma separated; n:
  -- how many. A claim has one user: no tables.
  local o, got, n
  if #users == 1 then
    local u = users[1]
    o = outcome(st, uk, u, all)
    if o == '-' then got, n = u, 1 else got, n = '', 0 end
  else
    local out, list = {}, {}
    for i = 1, #users do
      out[i] = outcome(st, uk, users[i], all)
      if out[i] == '-' then list[#list + 1] = users[i] end
    end
    o, got, n = table.concat(out), table.concat(list, ','), #list
  end
  local rec = st.gen .. '|' .. o .. '|' .. got .. suffix
  if fresh then
    if rcall('SET', rk, rec, 'EX', ttl, 'NX') then return o, n end
    local g, was = recGet(rk)
    if g == st.gen then
      for u in string.gmatch(got, '[^,]+') do
        if rcall('HINCRBY', uk, u, '-1') <= 0 then rcall('HDEL', uk, u) end
        if st.periodic then periodBack(st, u) end
      end
      st.stock, st.took = st.stock + n, st.took - n
      return was
    end
  end
  rcall('SET', rk, rec, 'EX', ttl)
  return o, n
end
`

// reserveScript: KEYS state, users, record; ARGV now seconds, now nanos,
// record TTL in seconds, then the users. Returns nil when the state is
// missing (cold), else the outcomes.
var reserveScript = rueidis.NewLuaScript(reserveLua + `
local st = state(KEYS[1])
if not st then return false end
local users = {}
for i = 4, #ARGV do users[#users + 1] = ARGV[i] end
local o = reserve(st, KEYS[2], KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], users, false)
flushStates()
return o
`)

// claimsScript is ReserveLimited for a batch of claims of one template
// that share their second, their number of users and their buckets'
// rates and bursts: for each in turn the tokens of its rate buckets
// (bucketLua), all or none, then its reservation (reserveLua). What the
// claims share goes once:
//
//   - KEYS: state, users, the template's ledger of claims not yet handed
//     off, the index of templates with such a ledger, the shared buckets
//     (those whose key is the same for every claim: the template's), then
//     for each claim its record and its own buckets;
//   - ARGV: the record TTL in seconds, now in seconds, the number of users
//     a claim and of buckets, for each bucket its rate, burst and "1" if
//     it is shared ("0" if each claim has its own), then for each claim
//     now's nanoseconds and its users.
//
// Answers one string a claim: "c" when the template is cold (no token
// taken), "rI:W" when its I-th bucket refused with a wait of W
// microseconds (nothing taken or reserved), else "o" and the outcomes:
// the tokens are taken whatever the outcomes, as each claim costs one,
// and a key seen before too. The shared buckets are read and written
// once a call. A claim that reserved a coupon under a new record is
// entered in the ledger (scored by its time in milliseconds) in the same
// step, so that no reservation exists that the ledger does not know
// (Cache.Handed, Cache.Abandoned).
var claimsScript, claimsSHA = luaScript(bucketLua + reserveLua + `
local ttl, s, nu, nb = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
-- list: an entry {key, rate, burst} a bucket, in order, for take; own:
-- the entries whose key changes with each claim.
local list, own, ki = {}, {}, 5
for i = 1, nb do
  local a = 2 + 3 * i
  local e = {false, tonumber(ARGV[a]), tonumber(ARGV[a + 1])}
  if ARGV[a + 2] == '1' then
    e[1] = KEYS[ki]
    ki = ki + 1
  else
    own[#own + 1] = e
  end
  list[i] = e
end
local nown = #own
local claims = (#KEYS - ki + 1) / (1 + nown)
local res = {}
local st = state(KEYS[1])
if not st then
  for i = 1, claims do res[i] = 'c' end
  return res
end
local uk, t, ai, users = KEYS[2], nil, 5 + 3 * nb, {}
local ms, ledgered = s * 1000, false
if nb > 0 then t = now() end
for c = 1, claims do
  local rk = KEYS[ki]
  for j = 1, nown do own[j][1] = KEYS[ki + j] end
  ki = ki + 1 + nown
  local refused, wait = 0, 0
  if nb > 0 then refused, wait = take(list, t) end
  if refused > 0 then
    res[c] = string.format('r%d:%d', refused, wait)
  else
    for i = 1, nu do users[i] = ARGV[ai + i] end
    local o, got = reserve(st, uk, rk, s, ARGV[ai], ttl, users, true)
    if got and got > 0 then
      rcall('ZADD', KEYS[3], ms + math.floor(tonumber(ARGV[ai]) / 1000000), rk)
      ledgered = true
    end
    res[c] = 'o' .. o
  end
  ai = ai + 1 + nu
end
if ledgered then rcall('SADD', KEYS[4], KEYS[1]) end
flushBuckets()
flushStates()
return res
`)

// releaseScript: KEYS state, users, record. A record made under another
// generation is not trusted: the state it reserved from was replaced.
var releaseScript = rueidis.NewLuaScript(reserveLua + `
local gen = redis.call('HGET', KEYS[1], 'gen')
if not gen then return 0 end
local g, o, r, day = recGet(KEYS[3])
if g ~= gen or not r or r == '' then return 0 end
local p = false
if day then
  p = {}
  p.dk, p.wk = periodKeys(KEYS[2], day)
end
local n = 0
for u in string.gmatch(r, '[^,]+') do
  if redis.call('HINCRBY', KEYS[2], u, -1) <= 0 then redis.call('HDEL', KEYS[2], u) end
  if p then periodBack(p, u) end
  n = n + 1
end
redis.call('HINCRBY', KEYS[1], 'stock', n)
redis.call('SET', KEYS[3], g .. '|' .. o .. '|', 'KEEPTTL')
return n
`)

// handedScript: KEYS the ledger, then the claims' records. Takes each
// record out of the ledger: 1 if it was there (the claim is now handed
// off and will never be reaped), 2 if a reaper holds it (it is being
// given back: the hand-off must not be confirmed), 0 if neither (handed
// off before, or given back already). ARGV: the reaping ledger's key.
var handedScript = rueidis.NewLuaScript(`
local res = {}
for i = 2, #KEYS do
  if redis.call('ZREM', KEYS[1], KEYS[i]) == 1 then res[#res + 1] = 1
  elseif redis.call('ZSCORE', ARGV[1], KEYS[i]) then res[#res + 1] = 2
  else res[#res + 1] = 0 end
end
return res
`)

// abandonScript: KEYS the ledger, the reaping ledger, the index of
// templates, the state key; ARGV the cutoff in milliseconds, the most to
// take. Moves the entries older than the cutoff to the reaping ledger
// and returns every entry there, as record key and score pairs. A
// template with neither ledger left leaves the index.
var abandonScript = rueidis.NewLuaScript(`
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
for i = 1, #old, 2 do
  redis.call('ZREM', KEYS[1], old[i])
  redis.call('ZADD', KEYS[2], old[i + 1], old[i])
end
local all = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1, 'WITHSCORES')
if #all == 0 and redis.call('ZCARD', KEYS[1]) == 0 then redis.call('SREM', KEYS[3], KEYS[4]) end
return all
`)

// updateScript: KEYS state; ARGV shop, status, ss, sn, es, en, limit,
// daily, weekly, stock delta. Returns nil when cold, else the new stock.
var updateScript = rueidis.NewLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'shop', ARGV[1], 'status', ARGV[2], 'ss', ARGV[3], 'sn', ARGV[4],
  'es', ARGV[5], 'en', ARGV[6], 'limit', ARGV[7], 'daily', ARGV[8], 'weekly', ARGV[9])
return redis.call('HINCRBY', KEYS[1], 'stock', ARGV[10])
`)

// swapScript: KEYS state, users, temp counts, temp day counts, temp week
// counts, and when the holdings carry period counts the day's and the
// week's hashes; ARGV gen, shop, status, ss, sn, es, en, limit, daily,
// weekly, stock, onlyCold. Replaces the counts and the state at once, and
// returns 1; with onlyCold "1" a loaded template stays, the temporary
// counts go and it returns 0. The period counts of the holdings' day and
// week replace those hashes, with the expiry reserveLua gives them; those
// of other days and weeks stay: no holdings tell them.
var swapScript = rueidis.NewLuaScript(`
if ARGV[12] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
  return 0
end
local function swap(temp, k)
  if redis.call('EXISTS', temp) == 1 then
    redis.call('RENAME', temp, k)
    redis.call('PERSIST', k)
    return true
  end
  redis.call('DEL', k)
  return false
end
swap(KEYS[3], KEYS[2])
if KEYS[6] then
  if swap(KEYS[4], KEYS[6]) then redis.call('EXPIRE', KEYS[6], 172800) end
  if swap(KEYS[5], KEYS[7]) then redis.call('EXPIRE', KEYS[7], 691200) end
else
  redis.call('DEL', KEYS[4], KEYS[5])
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'gen', ARGV[1], 'shop', ARGV[2], 'status', ARGV[3], 'ss', ARGV[4],
  'sn', ARGV[5], 'es', ARGV[6], 'en', ARGV[7], 'limit', ARGV[8], 'daily', ARGV[9], 'weekly', ARGV[10],
  'stock', ARGV[11])
return 1
`)

// heldScript: KEYS state, users; ARGV user. Returns nil when cold.
var heldScript = rueidis.NewLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
`)
