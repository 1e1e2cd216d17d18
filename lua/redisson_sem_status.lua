-- Reads an RPermitExpirableSemaphore without changing it: its free permits and one page of
-- the permits taken (by expiry; expired ones, which the next script reclaims, left out).
-- @key sem       the bare name: free permits
-- @key timeouts  {NAME}:timeout
-- @arg from      rank of the first permit listed
-- @arg limit     most permits listed
-- Reply: {free (-1: not set), now_ms, taken, next rank (-1: all listed), hex id, expiry ms
--         (-1: never), ...}; error "BADTYPE", "MALFORMED".
-- @include common.lua
-- @include redisson_sem.lua
local err = first_bad_type({{K.sem, 'string'}, {K.timeouts, 'zset'}})
if err then return err end
local free, bad = free_permits(K.sem)
if bad then return bad end
local now = server_time().ms
local expired = redis.call('ZCOUNT', K.timeouts, 0, now)
local taken = redis.call('ZCARD', K.timeouts) - expired
local from, limit = tonumber(A.from), tonumber(A.limit)
local page = redis.call('ZRANGEBYSCORE', K.timeouts, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', from, limit)
local next_from = from + #page / 2 < taken and from + #page / 2 or -1
local out = {free == nil and -1 or free + expired, now, taken, next_from}
for i = 1, #page, 2 do
  out[#out + 1] = id_hex(page[i])
  out[#out + 1] = tonumber(page[i + 1]) >= NON_EXPIRABLE and -1 or tonumber(page[i + 1])
end
return out
