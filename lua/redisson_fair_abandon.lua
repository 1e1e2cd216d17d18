-- A wait given up (RedissonFairLock.acquireFailedAsync, Redisson 3.x): the waiter leaves the
-- queue and its timeout, the waiters after it move up by its wait; a level this very request
-- took (its reply lost) is given back, waking the queue's head when that frees the lock.
-- @key lock      the lock hash (the bare name)
-- @key queue     redisson_lock_queue:{NAME}
-- @key timeouts  redisson_lock_timeout:{NAME}
-- @key exec      rlock's exec hold id (PREFIX redisson:{NAME}:fexec)
-- @key request   the request's record (what it took, see redisson_fair_acquire.lua)
-- @arg field     the waiter's field
-- @arg wait      its threadWaitTime in ms
-- @arg hold_id   the request's exec hold id, "" for a `lock` request
-- @arg channel   redisson_lock__channel:{NAME}
if redis.call('TYPE', K.queue)['ok'] == 'list' and redis.call('TYPE', K.timeouts)['ok'] == 'zset' then
  local queue = redis.call('lrange', K.queue, 0, -1)
  local i = 1
  while i <= #queue and queue[i] ~= A.field do i = i + 1 end
  i = i + 1
  while i <= #queue do
    redis.call('zincrby', K.timeouts, -tonumber(A.wait), queue[i])
    i = i + 1
  end
  redis.call('zrem', K.timeouts, A.field)
  redis.call('lrem', K.queue, 0, A.field)
end
local took = redis.call('GET', K.request)
redis.call('DEL', K.request)
if took and redis.call('TYPE', K.lock)['ok'] == 'hash' and redis.call('hexists', K.lock, A.field) == 1 then
  if A.hold_id ~= '' and redis.call('GET', K.exec) == A.hold_id then redis.call('DEL', K.exec) end
  if redis.call('hincrby', K.lock, A.field, -1) <= 0 then
    redis.call('del', K.lock)
    local nextThreadId = redis.call('lindex', K.queue, 0)
    if nextThreadId ~= false then
      redis.call('publish', A.channel .. ':' .. nextThreadId, '0')
      redis.call('spublish', A.channel .. ':' .. nextThreadId, '0')
    end
  end
end
return 0
