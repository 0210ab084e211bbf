package redis

import goredis "github.com/redis/go-redis/v9"

// The slot scripts keep one sorted set per decode worker, key <prefix>slots:<worker URL>:
// member "<lease id>#<i>" for each of the lease's n slots, score = expiry in Redis server
// milliseconds (TIME), so gateway clocks never matter. Every script first drops expired
// members. The set itself expires when its longest lease would, so abandoned workers leave
// nothing behind.

// nowMS is the shared prologue: the server time in milliseconds.
const nowMS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// keepKey extends the set's own expiry to cover a lease ending ttl from now.
const keepKey = `
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
`

// claimScript: KEYS[1] set; ARGV window, n, ttl ms, lease id. Returns {1, used} when the n
// slots were taken (used includes them) or {0, used} when they do not fit.
var claimScript = goredis.NewScript(nowMS + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
local used = redis.call('ZCARD', KEYS[1])
local window, n, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if used + n > window then return {0, used} end
local exp = string.format('%d', now + ttl)
for i = 1, n do redis.call('ZADD', KEYS[1], exp, ARGV[4] .. '#' .. i) end
` + keepKey + `
return {1, used + n}
`)

// renewScript: KEYS[1] set; ARGV ttl ms, lease id, n. Returns the number of the lease's
// slots still held (0: lost) after moving their expiry to now + ttl.
var renewScript = goredis.NewScript(nowMS + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
local ttl, n = tonumber(ARGV[1]), tonumber(ARGV[3])
local exp = string.format('%d', now + ttl)
local held = 0
for i = 1, n do
  local m = ARGV[2] .. '#' .. i
  if redis.call('ZSCORE', KEYS[1], m) then
    redis.call('ZADD', KEYS[1], 'XX', exp, m)
    held = held + 1
  end
end
if held > 0 then
` + keepKey + `
end
return held
`)

// releaseScript: KEYS[1] set; ARGV channel, worker URL, lease id, n. Removes the lease's
// slots and, when any were held, publishes "<freed>|<worker URL>" on the channel. Returns
// the number freed.
var releaseScript = goredis.NewScript(`
local freed = 0
for i = 1, tonumber(ARGV[4]) do
  freed = freed + redis.call('ZREM', KEYS[1], ARGV[3] .. '#' .. i)
end
if freed > 0 then redis.call('PUBLISH', ARGV[1], freed .. '|' .. ARGV[2]) end
return freed
`)

// inUseScript: KEYS[1] set. Returns the number of unexpired slots (read-only).
var inUseScript = goredis.NewScript(nowMS + `
return redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', now), '+inf')
`)

// The sticky value is "<ttl ms>|<worker URL>" so a read can refresh the idle expiry the
// last Set chose. getStickyScript: KEYS[1] key. Returns the worker or nil.
var getStickyScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
local i = string.find(v, '|', 1, true)
if not i then return false end
local ttl = tonumber(string.sub(v, 1, i - 1))
if ttl and ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return string.sub(v, i + 1)
`)
