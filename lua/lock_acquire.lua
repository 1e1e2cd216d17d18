-- Acquires or re-enters a reentrant lock; a fresh acquisition advances the fencing token.
-- A waiter ("wait" mode) also queues itself, so that a release can hand the lock straight
-- to it (see lock_release.lua) instead of waking everyone to race for it.
-- KEYS[1] lock hash (owner -> reentry count), KEYS[2] fencing token (string, no TTL),
-- KEYS[3] waiters (zset "<lease_ms>:<owner>" -> arrival time in server microseconds)
-- ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] "try" or "wait", ARGV[4] ms the caller will
-- still wait (keeps the queue alive that long; wait mode only)
-- Reply: {1, count, fence, lease_ms} when acquired or re-entered (in wait mode a hold by
--        the owner is a grant already made to it with this lease: returned as it is, not
--        re-entered);
--        {0, pttl_ms, owner1, count1, ...} when held by others;
--        error "WRONGTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
local function wrong_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. t .. ' ' .. key)
  end
end
local err = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'string') or wrong_type(KEYS[3], 'zset')
if err then return err end
local owner, lease, waiting = ARGV[1], tonumber(ARGV[2]), ARGV[3] == 'wait'
local member = ARGV[2] .. ':' .. owner

local stored = redis.call('GET', KEYS[2])
local last = 0
if stored then
  last = tonumber(stored)
  if not last then return redis.error_reply('MALFORMED ' .. KEYS[2]) end
end
local now = redis.call('TIME')
local now_us = tonumber(now[1]) * 1000000 + tonumber(now[2])

if redis.call('EXISTS', KEYS[1]) == 0 then
  -- max(stored + 1, server microseconds): never backwards, even when the counter was lost.
  local fence = math.max(last + 1, now_us)
  redis.call('SET', KEYS[2], string.format('%.0f', fence))
  redis.call('HSET', KEYS[1], owner, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('ZREM', KEYS[3], member)
  return {1, 1, fence, lease}
end

local count = redis.call('HGET', KEYS[1], owner)
if count then
  if waiting then
    redis.call('ZREM', KEYS[3], member)
    return {1, tonumber(count), last, lease}
  end
  count = redis.call('HINCRBY', KEYS[1], owner, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  return {1, count, last, lease}
end

if waiting then
  redis.call('ZADD', KEYS[3], 'NX', now_us, member)
  if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[4]) then
    redis.call('PEXPIRE', KEYS[3], ARGV[4])
  end
end
local reply = {0, redis.call('PTTL', KEYS[1])}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do reply[#reply + 1] = v end
return reply
