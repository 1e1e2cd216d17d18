-- Releases one level of a reentrant lock held by ARGV[1]; at level 0 deletes it and
-- publishes, unless ARGV[3] > 0 asks to keep it (count 0) for that many ms (--min-hold).
-- KEYS[1] lock hash
-- ARGV[1] owner, ARGV[2] channel to publish the release on, ARGV[3] keep ms (0 = none)
-- Reply: {1, remaining_count} when the owner held it;
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
redis.call('PUBLISH', ARGV[2], 'released')
return {1, 0}
