-- Creates a countdown latch with count `count` (KEYS: see latch_common.lua, then reply),
-- forgetting the ids of an earlier round. A live latch (count > 0) is left alone unless
-- force is '1'.
-- @arg count      (>= 1)
-- @arg expire_ms  expiry of the whole latch in ms (0 = none)
-- @arg force      '1' to reset a live latch
-- @arg channel    latch channel (for the ACL check)
-- @arg reply_ttl  ms the reply record is kept
-- @arg redisson   '1': Redisson's RCountDownLatch (see latch_common.lua): a new count is
--                 announced as "1", as trySetCount does
-- Reply: {1, previous} set; previous = the count it replaced, -1 when there was no latch;
--        {0, count} refused: the latch is live with this count, nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include common.lua
-- @include latch_common.lua
-- @key reply  this request's reply record (see once in common.lua)
return once(K.reply, A.reply_ttl, function()
local err, count = check_latch_keys(A.channel)
if err then return err end
if count and count > 0 and A.force ~= '1' then return {0, count} end
redis.call('DEL', K.ids)
if tonumber(A.expire_ms) > 0 then
  redis.call('SET', K.count, A.count, 'PX', A.expire_ms)
else
  redis.call('SET', K.count, A.count)
end
if redisson then announce(A.channel, nil, '1') end
return {1, count or -1}
end, function(r) return r[1] == 1 end)
