-- Acquires or re-enters a reentrant lock; a fresh acquisition advances the fencing token.
-- A waiter also queues itself, so that a release can hand the lock straight to it (see
-- lock_release.lua) instead of waking everyone to race for it. Each wait has its own id,
-- so two processes that share an owner never take one grant for both.
-- KEYS[1] lock hash (owner -> reentry count; 0 = kept by --min-hold, busy for everyone),
-- KEYS[2] fencing token (string, no TTL),
-- KEYS[3] waiters (zset "<lease_ms>:<wait_id>:<owner>" -> arrival in server microseconds)
-- ARGV[1] owner, ARGV[2] lease in ms,
-- ARGV[3] "try" (don't queue), "wait" (first attempt of a wait: queue) or "queued"
--         (later attempts: the entry is ours, and its absence means a release granted it),
-- ARGV[4] ms the caller will still wait (the queue lives that long), ARGV[5] wait id
-- Reply: {1, count, fence, lease_ms} when acquired, re-entered or granted earlier;
--        {0, pttl_ms, owner1, count1, ...} when held by others;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include lock_common.lua
local err = bad_type(KEYS[1], 'hash') or bad_type(KEYS[2], 'string') or bad_type(KEYS[3], 'zset')
if err then return err end
local owner, lease, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local member = ARGV[2] .. ':' .. ARGV[5] .. ':' .. owner

local stored = redis.call('GET', KEYS[2])
local last = 0
if stored then
  last = tonumber(stored)
  if not last then return redis.error_reply('MALFORMED ' .. KEYS[2]) end
end
local count = tonumber(redis.call('HGET', KEYS[1], owner) or '0')

if mode == 'queued' and count > 0 and not redis.call('ZSCORE', KEYS[3], member) then
  return {1, count, last, lease}  -- our entry was taken out by the release that granted us
end

if redis.call('EXISTS', KEYS[1]) == 0 then
  local fence = next_fence(KEYS[2], last)
  redis.call('HSET', KEYS[1], owner, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('ZREM', KEYS[3], member)
  return {1, 1, fence, lease}
end

if count > 0 then
  count = redis.call('HINCRBY', KEYS[1], owner, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('ZREM', KEYS[3], member)
  return {1, count, last, lease}
end

if mode ~= 'try' then
  local now = redis.call('TIME')
  redis.call('ZADD', KEYS[3], 'NX', tonumber(now[1]) * 1000000 + tonumber(now[2]), member)
  if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[4]) then
    redis.call('PEXPIRE', KEYS[3], ARGV[4])
  end
end
local reply = {0, redis.call('PTTL', KEYS[1])}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do reply[#reply + 1] = v end
return reply
