-- Extends the leases of permits iff every one of them is still held; never re-acquires a
-- permit that expired or was released (KEYS: see sem_common.lua; KEYS[4..7] unused).
-- ARGV[1] semaphore channel, ARGV[2] lease ms, ARGV[3..] permit ids.
-- Reply: {1, lease_ms} renewed (a renewal never shortens a lease);
--        {0, id1, id2, ...} the ids not held: nothing was renewed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include common.lua
-- @include waiter_queue.lua
-- @include sem_common.lua
local err = check_sem_keys(ARGV[1])
if err then return err end
local lease = tonumber(ARGV[2])
local now = server_time()
reclaim(now.ms)
local missing = {0}
for i = 3, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then missing[#missing + 1] = ARGV[i] end
end
if #missing > 1 then return missing end
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], 'GT', now.ms + lease, ARGV[i])
end
extend(KEYS[1], lease)
extend(KEYS[3], lease)
return {1, lease}
