-- Forgets a finished delivery's token (see KEYS[8] in queue_common.lua) once its consumer
-- has the reply of the finish: no retry of it can come any more.
-- KEYS: see queue_common.lua.
-- ARGV[1] queue channel, ARGV[2] lease token.
-- Reply: {1}; error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
local err = check_queue_keys(ARGV[1])
if err then return err end
redis.call('ZREM', KEYS[8], ARGV[2])
return {1}
