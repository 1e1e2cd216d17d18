-- Extends the permits `ids` of an RPermitExpirableSemaphore to `lease` ms from now
-- (RedissonPermitExpirableSemaphore updateLeaseTimeAsync on each) iff every one of them is
-- still taken; never re-takes one that expired or was released, never shortens one.
-- @key sem       the bare name: free permits
-- @key timeouts  {NAME}:timeout
-- @arg channel   redisson_sc:{NAME}
-- @arg lease     ms
-- @arg ids...    hex ids
-- Reply: {1, lease_ms} renewed; {0, hex id not held, ...}: nothing renewed.
-- @include common.lua
-- @include redisson_sem.lua
local now, err = opened(K.sem, K.timeouts, A.channel)
if not now then return err end
local missing = {0}
for _, id in ipairs(A.ids) do
  if not redis.call('ZSCORE', K.timeouts, id_bytes(id)) then missing[#missing + 1] = id end
end
if #missing > 1 then return missing end
for _, id in ipairs(A.ids) do
  redis.call('ZADD', K.timeouts, 'GT', now + tonumber(A.lease), id_bytes(id))
end
return {1, tonumber(A.lease)}
