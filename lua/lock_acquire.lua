-- Acquires or re-enters a reentrant lock; a fresh acquisition advances the fencing token.
-- KEYS[1] lock hash (owner -> reentry count), KEYS[2] fencing token (string, no TTL)
-- ARGV[1] owner, ARGV[2] lease in ms
-- Reply: {1, count, fence, lease_ms} when acquired or re-entered;
--        {0, pttl_ms, owner1, count1, ...} when held by others;
--        error "WRONGTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
local function wrong_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. t .. ' ' .. key)
  end
end
local err = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'string')
if err then return err end
local lease = tonumber(ARGV[2])

local stored = redis.call('GET', KEYS[2])
local last = 0
if stored then
  last = tonumber(stored)
  if not last then return redis.error_reply('MALFORMED ' .. KEYS[2]) end
end

if redis.call('EXISTS', KEYS[1]) == 0 then
  -- max(stored + 1, server microseconds): never backwards, even when the counter was lost.
  local now = redis.call('TIME')
  local fence = math.max(last + 1, tonumber(now[1]) * 1000000 + tonumber(now[2]))
  redis.call('SET', KEYS[2], string.format('%.0f', fence))
  redis.call('HSET', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  return {1, 1, fence, lease}
end

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  local count = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  return {1, count, last, lease}
end

local reply = {0, redis.call('PTTL', KEYS[1])}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do reply[#reply + 1] = v end
return reply
