-- Reads an RSemaphore's free count, as RedissonSemaphore availablePermitsAsync does (GET;
-- a name never set has none free), without changing it.
-- @key sem        the bare name: free permits (LongCodec)
-- Reply: {1, free}; {0, 0} never set; error "BADTYPE", "MALFORMED".
-- @include common.lua
-- @include redisson_sem.lua
local err = first_bad_type({{K.sem, 'string'}})
if err then return err end
local free, bad = free_permits(K.sem)
if bad then return bad end
if free == nil then return {0, 0} end
return {1, free}
