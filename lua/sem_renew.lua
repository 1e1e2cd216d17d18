-- Extends the leases of permits iff every one of them is still held; never re-acquires a
-- permit that expired or was released (KEYS: see sem_common.lua; waiters to request unused).
-- @arg channel  semaphore channel
-- @arg lease    lease ms
-- @arg ids...   permit ids
-- Reply: {1, lease_ms} renewed (a renewal never shortens a lease);
--        {0, id1, id2, ...} the ids not held: nothing was renewed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include common.lua
-- @include waiter_queue.lua
-- @include sem_common.lua
local err = check_sem_keys(A.channel)
if err then return err end
local lease = tonumber(A.lease)
local now = server_time()
reclaim(now.ms)
local missing = {0}
for _, id in ipairs(A.ids) do
  if not redis.call('ZSCORE', K.permits, id) then missing[#missing + 1] = id end
end
if #missing > 1 then return missing end
for _, id in ipairs(A.ids) do
  redis.call('ZADD', K.permits, 'GT', now.ms + lease, id)
end
extend(K.permits, lease)
extend(K.holders, lease)
extend(K.notes, lease)
return {1, lease}
