-- Releases one level of a reentrant lock held by ARGV[1]. At level 0 the lock goes to the
-- longest-waiting live waiter (one whose grant channel still has a subscriber: a waiter
-- that died has none), published on that waiter's channel with its new fencing token; with
-- no live waiter it is deleted and the release published. ARGV[3] > 0 instead keeps it held
-- (count 0) for that many ms (--min-hold).
-- KEYS[1] lock hash, KEYS[2] fencing token, KEYS[3] waiters (see lock_acquire.lua)
-- ARGV[1] owner, ARGV[2] release channel (a waiter's grant channel is this plus
-- ":<owner>", as KeyLayout::grant_channel names it), ARGV[3] keep ms (0 = none)
-- Reply: {1, remaining_count} when the owner held it (0 = released, handed over or kept);
--        {0, owner1, count1, ...} when it does not (empty list after the 0: the lock is free);
--        error "WRONGTYPE <type> <key>" and no change when the key is not a lock.
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('WRONGTYPE ' .. t .. ' ' .. KEYS[1])
end
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

if redis.call('TYPE', KEYS[3])['ok'] == 'zset' then
  while true do
    local first = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if not first then break end
    redis.call('ZREM', KEYS[3], first)
    local sep = string.find(first, ':', 1, true)
    local lease = sep and tonumber(string.sub(first, 1, sep - 1))
    if lease then
      local waiter = string.sub(first, sep + 1)
      local channel = ARGV[2] .. ':' .. waiter
      if redis.call('PUBSUB', 'NUMSUB', channel)[2] > 0 then
        local now = redis.call('TIME')
        local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
        local fence = math.max(last + 1, tonumber(now[1]) * 1000000 + tonumber(now[2]))
        redis.call('SET', KEYS[2], string.format('%.0f', fence))
        redis.call('HSET', KEYS[1], waiter, 1)
        redis.call('PEXPIRE', KEYS[1], lease)
        redis.call('PUBLISH', channel, string.format('granted %.0f %d', fence, lease))
        return {1, 0}
      end
    end
  end
end
redis.call('PUBLISH', ARGV[2], 'released')
return {1, 0}
