-- Releases one level of a reentrant lock held by ARGV[1]. At level 0 the lock goes to the
-- longest-waiting live waiter (one whose grant channel still has a subscriber: a waiter
-- that died has none), published on that waiter's channel with its new fencing token; with
-- no live waiter it is deleted and the release published. ARGV[3] > 0 instead keeps it held
-- (count 0, busy for everyone) for that many ms (--min-hold); releasing a kept lock ends it.
-- KEYS[1] lock hash, KEYS[2] fencing token, KEYS[3] waiters (see lock_acquire.lua)
-- ARGV[1] owner, ARGV[2] release channel (a wait's grant channel is this plus
-- ":<wait_id>", as KeyLayout::grant_channel names it), ARGV[3] keep ms (0 = none)
-- Reply: {1, remaining_count} when the owner held it (0 = released, handed over or kept);
--        {0, owner1, count1, ...} when it does not (empty list after the 0: the lock is free);
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include lock_common.lua
local err = bad_type(KEYS[1], 'hash') or bad_type(KEYS[2], 'string') or bad_type(KEYS[3], 'zset')
if err then return err end
local stored = redis.call('GET', KEYS[2])
local last = tonumber(stored or '0')
if not last then return redis.error_reply('MALFORMED ' .. KEYS[2]) end

local count = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
if not count then
  local reply = {0}
  for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do reply[#reply + 1] = v end
  return reply
end
if count > 1 then
  return {1, redis.call('HINCRBY', KEYS[1], ARGV[1], -1)}
end
local keep = tonumber(ARGV[3])
if count == 1 and keep > 0 then
  redis.call('HSET', KEYS[1], ARGV[1], 0)
  redis.call('PEXPIRE', KEYS[1], keep)
  return {1, 0}
end
redis.call('DEL', KEYS[1])

while true do
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if not first then break end
  redis.call('ZREM', KEYS[3], first)
  local lease, wait_id, waiter = string.match(first, '^(%d+):(%x+):(.*)$')
  if lease then
    local channel = ARGV[2] .. ':' .. wait_id
    if redis.call('PUBSUB', 'NUMSUB', channel)[2] > 0 then
      local fence = next_fence(KEYS[2], last)
      redis.call('HSET', KEYS[1], waiter, 1)
      redis.call('PEXPIRE', KEYS[1], lease)
      redis.call('PUBLISH', channel, string.format('granted %.0f %s', fence, lease))
      return {1, 0}
    end
  end
end
redis.call('PUBLISH', ARGV[2], 'released')
return {1, 0}
