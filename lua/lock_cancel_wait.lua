-- Leaves the waiters' queue when a wait ends unsatisfied (time ran out, interrupted).
-- A release may have handed the lock over just before: then the entry is already gone and
-- the caller holds the lock.
-- KEYS[1] lock hash, KEYS[2] fencing token, KEYS[3] waiters (see lock_acquire.lua)
-- ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] wait id
-- Reply: {1, count, fence} when the caller was granted the lock; {0} otherwise.
local queue = redis.call('TYPE', KEYS[3])['ok']
if queue == 'zset' and redis.call('ZREM', KEYS[3], ARGV[2] .. ':' .. ARGV[3] .. ':' .. ARGV[1]) == 1 then
  return {0}  -- still queued: nobody granted it to us
end
if queue ~= 'zset' and queue ~= 'none' then return {0} end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return {0} end
local count = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if count < 1 then return {0} end
return {1, count, tonumber(redis.call('GET', KEYS[2]) or '0') or 0}
