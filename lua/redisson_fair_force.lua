-- Frees an RFairLock whoever holds it (RedissonFairLock.forceUnlockAsync, Redisson 3.x):
-- stale waiters dropped, the hash deleted, the queue's head woken on its own channel with
-- "0" (PUBLISH and SPUBLISH); rlock's exec hold id goes with it.
-- @key lock      the lock hash (the bare name)
-- @key queue     redisson_lock_queue:{NAME}
-- @key timeouts  redisson_lock_timeout:{NAME}
-- @key exec      rlock's exec hold id (PREFIX redisson:{NAME}:fexec)
-- @arg channel   redisson_lock__channel:{NAME}
-- Reply: {field, count, ...} who held it (empty: it was free).
-- @include common.lua
local err = first_bad_type({{K.lock, 'hash'}, {K.queue, 'list'}, {K.timeouts, 'zset'}, {K.exec, 'string'}})
if err then return err end
if redis.call('HGET', K.lock, 'rate') and redis.call('HGET', K.lock, 'interval') then
  return redis.error_reply('BADTYPE Redisson-RRateLimiter ' .. K.lock)  -- no lock's hash
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local firstThreadId2 = redis.call('lindex', K.queue, 0)
  if firstThreadId2 == false then break end
  local timeout = redis.call('zscore', K.timeouts, firstThreadId2)
  if timeout ~= false and tonumber(timeout) <= now then
    redis.call('zrem', K.timeouts, firstThreadId2)
    redis.call('lpop', K.queue)
  else
    break
  end
end
local held = redis.call('hgetall', K.lock)
redis.call('DEL', K.exec)
if redis.call('del', K.lock) == 1 then
  local nextThreadId = redis.call('lindex', K.queue, 0)
  if nextThreadId ~= false then
    redis.call('publish', A.channel .. ':' .. nextThreadId, '0')
    redis.call('spublish', A.channel .. ':' .. nextThreadId, '0')
  end
end
return held
