-- Reads a latch (KEYS: see latch_common.lua) without changing it.
-- ARGV[1] '1' to include the ids counted, '0' for the count alone
-- Reply: {0} no such latch;
--        {1, count, ttl_ms (-1 = no expiry), id1, id2, ...} (ids only when asked);
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" when the keys are not a latch.
-- @include common.lua
-- @include latch_common.lua
local err, count = check_latch_keys(nil)
if err then return err end
if not count then return {0} end
local reply = {1, count, redis.call('PTTL', KEYS[1])}
if ARGV[1] == '1' then
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do reply[#reply + 1] = id end
end
return reply
