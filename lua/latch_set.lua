-- Creates a countdown latch with count ARGV[1] (KEYS: see latch_common.lua), forgetting the
-- ids of an earlier round. A live latch (count > 0) is left alone unless ARGV[3] is '1'.
-- ARGV[1] count (>= 1), ARGV[2] expiry of the whole latch in ms (0 = none),
-- ARGV[3] '1' to reset a live latch, ARGV[4] latch channel (for the ACL check)
-- Reply: {1, previous} set; previous = the count it replaced, -1 when there was no latch;
--        {0, count} refused: the latch is live with this count, nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- KEYS[3] this request's reply record (see once in common.lua).
-- @include common.lua
-- @include latch_common.lua
return once(KEYS[3], function()
local err, count = check_latch_keys(ARGV[4])
if err then return err end
if count and count > 0 and ARGV[3] ~= '1' then return {0, count} end
redis.call('DEL', KEYS[2])
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
return {1, count or -1}
end, function(r) return r[1] == 1 end)
