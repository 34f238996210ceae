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
// doubles, exact for seconds but not for nanoseconds since 1970), limit
// and stock. A key record holds: g (the gen it was made under), o (one
// outcome character per user) and r (the users it reserved, comma
// separated; emptied by Release).

// reserveLua defines the reservation of reserveScript and
// reserveLimitedScript: state() reads the state hash KEYS[1] (its gen is
// nil when the template is cold), and reserve(st, ab) reserves for the
// users of ARGV against st, KEYS[2] holding the user counts and KEYS[3]
// the key record. ARGV[ab+1], ARGV[ab+2] are now in seconds and nanos,
// ARGV[ab+3] the record TTL in seconds, the rest the users. It returns
// the outcomes: those recorded under the key if the record is of st's
// generation.
const reserveLua = `
local function state()
  return redis.call('HMGET', KEYS[1], 'gen', 'status', 'ss', 'sn', 'es', 'en', 'limit', 'stock')
end
local function reserve(st, ab)
  local gen = st[1]
  local rec = redis.call('HMGET', KEYS[3], 'g', 'o')
  if rec[1] == gen then return rec[2] end
  local s, ns = tonumber(ARGV[ab + 1]), tonumber(ARGV[ab + 2])
  local ss, sn, es, en = tonumber(st[3]), tonumber(st[4]), tonumber(st[5]), tonumber(st[6])
  local all = false
  if st[2] ~= 'active' then all = 'i'
  elseif s < ss or (s == ss and ns < sn) then all = 'n'
  elseif s > es or (s == es and ns >= en) then all = 'e'
  end
  local limit, stock = tonumber(st[7]), tonumber(st[8])
  local out, got = {}, {}
  for i = ab + 4, #ARGV do
    local u = ARGV[i]
    if all then
      out[#out + 1] = all
    else
      local held = tonumber(redis.call('HGET', KEYS[2], u) or '0')
      if held >= limit then
        out[#out + 1] = 'l'
      elseif stock <= 0 then
        out[#out + 1] = 's'
      else
        stock = stock - 1
        redis.call('HINCRBY', KEYS[2], u, 1)
        out[#out + 1] = '-'
        got[#got + 1] = u
      end
    end
  end
  if #got > 0 then redis.call('HINCRBY', KEYS[1], 'stock', -#got) end
  local o = table.concat(out)
  redis.call('HSET', KEYS[3], 'g', gen, 'o', o, 'r', table.concat(got, ','))
  redis.call('EXPIRE', KEYS[3], ARGV[ab + 3])
  return o
end
`

// reserveScript: KEYS state, users, record; ARGV now seconds, now nanos,
// record TTL in seconds, then the users. Returns nil when the state is
// missing (cold), else the outcomes.
var reserveScript = rueidis.NewLuaScript(reserveLua + `
local st = state()
if not st[1] then return false end
return reserve(st, 0)
`)

// reserveLimitedScript is allowScript and reserveScript in one: KEYS
// state, users, record, then the rate buckets; ARGV rate and burst of
// each bucket, then reserveScript's. Returns nil when cold (no token
// taken), {i, wait} when the i-th bucket refused (see takeLua; nothing
// written), else {0, 0, outcomes}: the tokens are taken whatever the
// outcomes, as each claim costs one, and a key seen before too.
var reserveLimitedScript = rueidis.NewLuaScript(takeLua + reserveLua + `
local st = state()
if not st[1] then return false end
local refused, wait = take(3, 0)
if refused > 0 then return {refused, wait} end
return {0, 0, reserve(st, 2 * (#KEYS - 3))}
`)

// releaseScript: KEYS state, users, record. A record made under another
// generation is not trusted: the state it reserved from was replaced.
var releaseScript = rueidis.NewLuaScript(`
local gen = redis.call('HGET', KEYS[1], 'gen')
if not gen then return 0 end
local rec = redis.call('HMGET', KEYS[3], 'g', 'r')
if rec[1] ~= gen or not rec[2] or rec[2] == '' then return 0 end
local n = 0
for u in string.gmatch(rec[2], '[^,]+') do
  if redis.call('HINCRBY', KEYS[2], u, -1) <= 0 then redis.call('HDEL', KEYS[2], u) end
  n = n + 1
end
redis.call('HINCRBY', KEYS[1], 'stock', n)
redis.call('HSET', KEYS[3], 'r', '')
return n
`)

// updateScript: KEYS state; ARGV shop, status, ss, sn, es, en, limit,
// stock delta. Returns nil when cold, else the new stock.
var updateScript = rueidis.NewLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'shop', ARGV[1], 'status', ARGV[2], 'ss', ARGV[3], 'sn', ARGV[4],
  'es', ARGV[5], 'en', ARGV[6], 'limit', ARGV[7])
return redis.call('HINCRBY', KEYS[1], 'stock', ARGV[8])
`)

// swapScript: KEYS state, users, temp counts; ARGV gen, shop, status, ss,
// sn, es, en, limit, stock, onlyCold. Replaces the counts and the state at
// once, and returns 1; with onlyCold "1" a loaded template stays, the
// temporary counts go and it returns 0.
var swapScript = rueidis.NewLuaScript(`
if ARGV[10] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('DEL', KEYS[3])
  return 0
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('RENAME', KEYS[3], KEYS[2])
  redis.call('PERSIST', KEYS[2])
else
  redis.call('DEL', KEYS[2])
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'gen', ARGV[1], 'shop', ARGV[2], 'status', ARGV[3], 'ss', ARGV[4],
  'sn', ARGV[5], 'es', ARGV[6], 'en', ARGV[7], 'limit', ARGV[8], 'stock', ARGV[9])
return 1
`)

// heldScript: KEYS state, users; ARGV user. Returns nil when cold.
var heldScript = rueidis.NewLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
`)
