-- Forgets a finished delivery's token (see finished in queue_common.lua) once its consumer
-- has the reply of the finish: no retry of it can come any more.
-- KEYS: see queue_common.lua.
-- @arg channel  queue channel
-- @arg token    lease token
-- Reply: {1}; error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
local err = check_queue_keys(A.channel)
if err then return err end
redis.call('ZREM', K.finished, A.token)
return {1}
