-- Releases a lock whoever holds it (for stuck locks) and wakes its waiters.
-- KEYS[1] lock hash
-- ARGV[1] channel to publish the release on
-- Reply: {owner1, count1, ...} of the holders it removed (empty when it was free);
--        error "BADTYPE <type> <key>" and no change when the key is not a lock.
-- @include lock_common.lua
local err = bad_type(KEYS[1], 'hash')
if err then return err end
local holders = redis.call('HGETALL', KEYS[1])
if #holders > 0 then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[1], 'released')
end
return holders
