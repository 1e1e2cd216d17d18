-- Releases a lock whoever holds it, writer and readers (for stuck locks), and passes it to
-- the waiters at the head, or announces it free (KEYS: see lock_common.lua; KEYS[7] unused).
-- ARGV[1] lock channel, ARGV[2] claim ms, ARGV[3] ms the reply record is kept, ARGV[4]
-- Redisson's lock channel or "" (see foreign_channel in lock_common.lua), ARGV[5] the least
-- token to hand the next waiter, or "" (a quorum's: see fence_floor in lock_common.lua)
-- Reply: {owner1, count1, ...} of the holders it removed (empty when it was free);
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change when the keys are
--        not a well-formed lock.
-- KEYS[12] this request's reply record (see once in common.lua).
-- On a quorum (redis/quorum_rule.hpp):
-- @quorum union
-- @include common.lua
-- @include waiter_queue.lua
-- @include lock_common.lua
foreign_channel = ARGV[4] or ''
fence_floor = tonumber(ARGV[5]) or 0
return once(KEYS[12], ARGV[3], function()
local err = check_lock_keys(ARGV[1])
if err then return err end
purge_readers(server_time().ms)
local holders = holders_reply({})
redis.call('DEL', KEYS[5], KEYS[6], KEYS[9])
if #holders > 0 then
  redis.call('DEL', KEYS[1], KEYS[8], KEYS[11])
  pass_on(ARGV[1], ARGV[2])
end
return holders
end, function(r) return #r > 0 end)
