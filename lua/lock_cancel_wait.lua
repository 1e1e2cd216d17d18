-- Leaves the waiters' queue when a wait ends unsatisfied (time ran out, interrupted).
-- A release may have handed the lock over just before: then the caller holds it.
-- KEYS[1] lock hash, KEYS[2] fencing token, KEYS[3] waiters (see lock_acquire.lua)
-- ARGV[1] owner, ARGV[2] lease in ms (the queue entry is "<lease_ms>:<owner>")
-- Reply: {1, count, fence} when the caller holds the lock after all; {0} otherwise.
if redis.call('TYPE', KEYS[3])['ok'] == 'zset' then
  redis.call('ZREM', KEYS[3], ARGV[2] .. ':' .. ARGV[1])
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return {0} end
local count = redis.call('HGET', KEYS[1], ARGV[1])
if not count then return {0} end
return {1, tonumber(count), tonumber(redis.call('GET', KEYS[2]) or '0') or 0}
