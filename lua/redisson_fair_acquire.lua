-- One attempt at Redisson's RFairLock (RedissonFairLock.tryLockInnerAsync, Redisson 3.x),
-- its Lua kept step for step with rlock's extras beside it: the server's clock stands for
-- the caller's currentTime (rlock never decides on the client's clock), the fence and the
-- exec hold id live under rlock's prefix, and a wait that ends busy leaves the queue as
-- acquireFailedAsync does, in the same script.
-- @key lock      the lock hash (the bare name): field "<UUID>:<thread>" -> count
-- @key queue     redisson_lock_queue:{NAME}, the waiters' fields in order
-- @key timeouts  redisson_lock_timeout:{NAME}, each waiter's timeout (epoch ms)
-- @key fence     rlock's fence counter (PREFIX redisson:{NAME}:fence)
-- @key exec      rlock's exec hold id (PREFIX redisson:{NAME}:fexec)
-- @key request   this request's record (PREFIX redisson:{NAME}:req:<id>): what it took
-- @arg field     the requester's field
-- @arg lease     lease in ms
-- @arg wait      Redisson's threadWaitTime in ms (the wait's own length, as tryLock's)
-- @arg mode      try | wait | queued | claim | last
-- @arg hold_id   an exec hold's id, "" for a `lock` hold
-- @arg ancestry  the exec hold ids of the rlock processes the caller runs under, each
--                followed by a space
-- Reply: {1, count, fence, lease in force, fresh (1/0)} acquired;
--        {0, ttl, next_ms, ahead, field, count, ...} busy: ttl is what Redisson's script
--        returns, next_ms when to look again (-1: only a message), ahead the waiters before
--        this one (-1: not queued), then the holders;
--        error "SELF <hold id>" when an exec the caller runs under holds it (it would wait
--        for itself): nothing changed.
-- @include common.lua
local err = first_bad_type({{K.lock, 'hash'}, {K.queue, 'list'}, {K.timeouts, 'zset'}, {K.exec, 'string'}})
if err then return err end
if redis.call('HGET', K.lock, 'rate') and redis.call('HGET', K.lock, 'interval') then
  return redis.error_reply('BADTYPE Redisson-RRateLimiter ' .. K.lock)  -- no lock's hash
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = tonumber(A.wait)
local lease = tonumber(A.lease)

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

local function granted(count, fresh)
  local fence
  if fresh then fence = redis.call('INCR', K.fence) else fence = tonumber(redis.call('GET', K.fence) or '0') end
  if A.hold_id ~= '' then redis.call('SET', K.exec, A.hold_id, 'PX', lease) end
  redis.call('SET', K.request, count .. ':' .. fence .. ':' .. (fresh and 1 or 0), 'PX', REQUEST_TTL)
  return {1, count, fence, redis.call('PTTL', K.lock), fresh and 1 or 0}
end

-- A repeat of an attempt that took the lock (its reply was lost) reports what it took.
local taken = redis.call('GET', K.request)
if taken and redis.call('hexists', K.lock, A.field) == 1 then
  local c, f, fresh = string.match(taken, '^(%d+):(%d+):(%d)$')
  return {1, tonumber(c), tonumber(f), redis.call('PTTL', K.lock), tonumber(fresh)}
end

if (redis.call('exists', K.lock) == 0)
    and ((redis.call('exists', K.queue) == 0) or (redis.call('lindex', K.queue, 0) == A.field)) then
  redis.call('lpop', K.queue)
  redis.call('zrem', K.timeouts, A.field)
  local keys = redis.call('zrange', K.timeouts, 0, -1)
  for i = 1, #keys, 1 do
    redis.call('zincrby', K.timeouts, -wait, keys[i])
  end
  redis.call('hset', K.lock, A.field, 1)
  redis.call('pexpire', K.lock, lease)
  return granted(1, true)
end

-- A re-entry; an exec hold is exclusive even against its own owner's other exec, and a
-- re-entry never shortens the lease in force (Redisson's sets it).
local exec_id = redis.call('GET', K.exec)
if redis.call('hexists', K.lock, A.field) == 1 and not (exec_id and A.hold_id ~= '') then
  local c = redis.call('hincrby', K.lock, A.field, 1)
  if redis.call('PTTL', K.lock) < lease then redis.call('pexpire', K.lock, lease) end
  return granted(c, false)
end

local function busy(ttl, queued)
  local pttl = redis.call('pttl', K.lock)
  local next_ms = pttl
  if pttl == -2 then
    -- Free, but another waiter is at the head: it takes it, or it is dropped at its timeout.
    local head = redis.call('lindex', K.queue, 0)
    local score = head and redis.call('zscore', K.timeouts, head)
    next_ms = score and math.max(0, tonumber(score) - now) or 0
  end
  local ahead = -1
  if queued then
    local q = redis.call('lrange', K.queue, 0, -1)
    for i = 1, #q do
      if q[i] == A.field then ahead = i - 1 break end
    end
  end
  local reply = {0, ttl, next_ms, ahead}
  local h = redis.call('hgetall', K.lock)
  for i = 1, #h do reply[#reply + 1] = h[i] end
  return reply
end

if exec_id and string.find(A.ancestry, exec_id .. ' ', 1, true) then
  return redis.error_reply('SELF ' .. exec_id)
end
if A.mode == 'try' then return busy(1, false) end
if A.mode == 'last' then
  -- acquireFailedAsync: leave the queue, the waiters after this one move up by its wait
  local queue = redis.call('lrange', K.queue, 0, -1)
  local i = 1
  while i <= #queue and queue[i] ~= A.field do i = i + 1 end
  i = i + 1
  while i <= #queue do
    redis.call('zincrby', K.timeouts, -wait, queue[i])
    i = i + 1
  end
  redis.call('zrem', K.timeouts, A.field)
  redis.call('lrem', K.queue, 0, A.field)
  return busy(1, false)
end

-- the lock cannot be acquired: check if the thread is already in the queue
local timeout = redis.call('zscore', K.timeouts, A.field)
if timeout ~= false then
  local ttl = redis.call('pttl', K.lock)
  return busy(math.max(0, ttl), true)
end

local lastThreadId = redis.call('lindex', K.queue, -1)
local ttl
if lastThreadId ~= false and lastThreadId ~= A.field and redis.call('zscore', K.timeouts, lastThreadId) ~= false then
  ttl = tonumber(redis.call('zscore', K.timeouts, lastThreadId)) - now
else
  ttl = redis.call('pttl', K.lock)
end
local timeout = ttl + wait + now
if redis.call('zadd', K.timeouts, timeout, A.field) == 1 then
  redis.call('rpush', K.queue, A.field)
end
return busy(ttl, true)
