-- Takes `count` permits of an RPermitExpirableSemaphore (RedissonPermitExpirableSemaphore
-- tryAcquireAsync) under the given ids, each expiring `lease` ms from now on the server's
-- clock. A semaphore not set yet is set to `capacity` (trySetPermits); one whose total
-- (free + taken) differs from it is refused unless `resize` (setPermits). Idempotent: a
-- repeat of a request whose ids are taken already reports them taken again.
-- @key sem       the bare name: free permits
-- @key timeouts  {NAME}:timeout
-- @arg channel   redisson_sc:{NAME}
-- @arg count     permits to take
-- @arg lease     ms
-- @arg capacity  --permits
-- @arg resize    "1": make the total `capacity`
-- @arg ids...    the permits' hex ids, `count` of them
-- Reply: {1, lease_ms, id, ...} taken; {0, next_expiry_ms (-1: none), taken, total} busy;
--        error "CAPACITY <total> <capacity>", "BADTYPE", "MALFORMED" and no change.
-- @include common.lua
-- @include redisson_sem.lua
local err = first_bad_type({{K.sem, 'string'}, {K.timeouts, 'zset'}})
if err then return err end
local free, bad = free_permits(K.sem)
if bad then return bad end
local now = server_time().ms
local count, capacity = tonumber(A.count), tonumber(A.capacity)
local function taken_reply(lease)
  local out = {1, lease}
  for _, id in ipairs(A.ids) do out[#out + 1] = id end
  return out
end
-- A repeat of a request that took its permits (its reply lost); one whose permits expired
-- since takes anew.
local first = redis.call('ZSCORE', K.timeouts, id_bytes(A.ids[1]))
if first and tonumber(first) > now then return taken_reply(tonumber(first) - now) end
-- The total is checked before anything is written: reclaiming moves permits from the zset
-- to the free count and leaves the total as it is.
if free ~= nil and A.resize ~= '1' then
  local total = free + redis.call('ZCARD', K.timeouts)
  if total ~= capacity then return redis.error_reply('CAPACITY ' .. total .. ' ' .. capacity) end
end
reclaim(K.sem, K.timeouts, A.channel, now)
if free == nil then
  redis.call('SET', K.sem, capacity)
  announce(A.channel, capacity)
else
  local total = tonumber(redis.call('GET', K.sem)) + redis.call('ZCARD', K.timeouts)
  if total ~= capacity then
    redis.call('INCRBY', K.sem, capacity - total)
    announce(A.channel, capacity)
  end
end
free = tonumber(redis.call('GET', K.sem))
if free >= count then
  redis.call('DECRBY', K.sem, count)
  for _, id in ipairs(A.ids) do
    redis.call('ZADD', K.timeouts, now + tonumber(A.lease), id_bytes(id))
  end
  local ttl = redis.call('PTTL', K.sem)
  if ttl > 0 then redis.call('PEXPIRE', K.timeouts, ttl) end
  return taken_reply(tonumber(A.lease))
end
local taken = redis.call('ZCARD', K.timeouts)
local next_ms = -1
local v = redis.call('ZRANGE', K.timeouts, 0, 0, 'WITHSCORES')
if v[1] ~= nil and tonumber(v[2]) < NON_EXPIRABLE then next_ms = math.max(tonumber(v[2]) - now, 0) end
return {0, next_ms, taken, free + taken}
