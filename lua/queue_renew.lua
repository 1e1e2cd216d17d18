-- Extends the lease of an item in flight iff it is still this delivery's (token); an
-- expired lease is never taken back.
-- KEYS: see queue_common.lua.
-- ARGV[1] queue channel, ARGV[2] item id, ARGV[3] lease token, ARGV[4] visibility ms.
-- Reply: {1} renewed; {0} the lease is gone (expired, the item delivered again or deleted);
--        error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
local err = check_queue_keys(ARGV[1])
if err then return err end
local now = server_time().ms
reclaim(now, ARGV[1])
if not lease_is(ARGV[2], ARGV[3]) then return {0} end
redis.call('ZADD', KEYS[5], now + tonumber(ARGV[4]), ARGV[2])
return {1}
