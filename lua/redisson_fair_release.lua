-- Releases one level of an RFairLock hold (RedissonFairLock.unlockInnerAsync, Redisson
-- 3.x): its unlock latch (redisson_unlock_latch:{NAME}:<request id>) answers a repeat, a
-- lock freed wakes the queue's head on its own channel "redisson_lock__channel:{NAME}:
-- <field>" with UNLOCK_MESSAGE "0", by PUBLISH and SPUBLISH (Redisson's classic and sharded
-- modes). rlock's extras: the server's clock, an exec hold named by its id, --min-hold.
-- @key lock      the lock hash (the bare name)
-- @key queue     redisson_lock_queue:{NAME}
-- @key timeouts  redisson_lock_timeout:{NAME}
-- @key latch     redisson_unlock_latch:{NAME}:<request id>
-- @key exec      rlock's exec hold id (PREFIX redisson:{NAME}:fexec)
-- @arg field     the owner's field
-- @arg lease     the lease a level left keeps (Redisson's internalLockLeaseTime)
-- @arg channel   redisson_lock__channel:{NAME}
-- @arg latch_ms  how long the latch answers repeats
-- @arg hold_id   the exec hold's id, "" for a `lock` hold
-- @arg keep_ms   --min-hold: keep the hash (count 0) this long; "0" for none
-- Reply: {1, levels left} released; {0, field, count, ...} not held by field (the
-- holders); {2, field, count, ...} refused: the last level is a running exec's.
-- @include common.lua
local err = first_bad_type({{K.lock, 'hash'}, {K.queue, 'list'}, {K.timeouts, 'zset'}, {K.exec, 'string'}})
if err then return err end
local function holders(status)
  local reply = {status}
  local h = redis.call('hgetall', K.lock)
  for i = 1, #h do reply[#reply + 1] = h[i] end
  return reply
end
local val = redis.call('get', K.latch)
if val ~= false then return {1, tonumber(val) == 1 and 0 or 1} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- remove stale threads (as Redisson's script)
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

local function wake_head()
  local nextThreadId = redis.call('lindex', K.queue, 0)
  if nextThreadId ~= false then
    redis.call('publish', A.channel .. ':' .. nextThreadId, '0')
    redis.call('spublish', A.channel .. ':' .. nextThreadId, '0')
  end
end

if redis.call('hexists', K.lock, A.field) == 0 then return holders(0) end
local exec_id = redis.call('GET', K.exec)
local count = tonumber(redis.call('hget', K.lock, A.field))
if A.hold_id ~= '' and exec_id ~= A.hold_id then return holders(0) end
if A.hold_id == '' and exec_id and count <= 1 then return holders(2) end
if A.hold_id ~= '' then redis.call('DEL', K.exec) end
local counter = redis.call('hincrby', K.lock, A.field, -1)
if counter > 0 then
  -- Redisson sets its watchdog's lease; the lease in force of a level left is never shortened.
  if redis.call('pttl', K.lock) < tonumber(A.lease) then redis.call('pexpire', K.lock, A.lease) end
  redis.call('set', K.latch, 0, 'px', A.latch_ms)
  return {1, counter}
end
if tonumber(A.keep_ms) > 0 then
  -- Kept busy (count 0) until it expires; the head then finds it free at its next look.
  redis.call('pexpire', K.lock, A.keep_ms)
  redis.call('set', K.latch, 1, 'px', A.latch_ms)
  return {1, 0}
end
redis.call('del', K.lock)
redis.call('set', K.latch, 1, 'px', A.latch_ms)
wake_head()
return {1, 0}
