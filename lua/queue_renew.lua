-- Extends the lease of an item in flight iff it is still this delivery's (token); an
-- expired lease is never taken back.
-- KEYS: see queue_common.lua.
-- @arg channel        queue channel
-- @arg id             item id
-- @arg token          lease token
-- @arg visibility_ms  visibility ms
-- Reply: {1} renewed; {0} the lease is gone (expired, the item delivered again or deleted);
--        error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
local err = check_queue_keys(A.channel)
if err then return err end
local now = server_time().ms
reclaim(now, A.channel)
if not lease_is(A.id, A.token) then return {0} end
redis.call('ZADD', K.in_flight, now + tonumber(A.visibility_ms), A.id)
return {1}
