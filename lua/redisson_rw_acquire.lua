-- One attempt at Redisson's read lock (share = "read") or write lock ("write") for
-- `field`, as RedissonReadLock / RedissonWriteLock.tryLockInnerAsync do it: the read lock
-- is taken when the lock is free, read, or written by this very field's writer; the write
-- lock when free, or re-entered by its writer (the lease then grows by `lease`, as in
-- Redisson). A fresh hold takes the next fencing token from rlock's own fence key.
-- @key lock       the hash under the bare name
-- @key timeouts   "{NAME}": the read holds' lease keys start with it
-- @key fence      rlock's fencing token
-- @key [reply]    this attempt's reply record
-- @arg share      read or write
-- @arg field      "<UUID>:<thread>" (the write lock's field is it + ":write")
-- @arg lease      lease in ms
-- @arg reply_ttl  how long the reply record lives (ms)
-- Reply: {1, count, fence, lease in force, fresh (1/0)} when held; {0, pttl, holders_total,
--        field, count, ...} (at most 100 holders) when busy; {-1} when the request was
--        given up before it ran (lua/redisson_rw_release.lua's give_up);
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" when the keys are no such lock.
-- @include common.lua
-- @include redisson_rw.lua
local denied = first_denied({{'HSET', K.lock, 'f', '1'}, {'PEXPIRE', K.lock, '1'}, {'SET', K.timeouts, '1'},
  {'PEXPIRE', K.timeouts, '1'}, {'INCR', K.fence}, {'HGETALL', K.lock}, {'PTTL', K.lock}, {'GET', K.fence}})
if denied then return denied end
local err = bad_type(K.fence, 'string')
if err then return err end
if redis.call('HGET', K.lock, 'rate') and redis.call('HGET', K.lock, 'interval') then
  return redis.error_reply('BADTYPE Redisson-RRateLimiter ' .. K.lock)  -- no lock's hash
end
return once(K.reply, A.reply_ttl, function()
  local mode, bad = rw_mode(K.lock)
  if bad then return bad end
  local lease = tonumber(A.lease)
  local count
  if A.share == 'read' then
    if mode == false then
      redis.call('HSET', K.lock, 'mode', 'read')
      redis.call('HSET', K.lock, A.field, 1)
      redis.call('SET', K.timeouts .. ':' .. A.field .. ':rwlock_timeout:1', 1)
      redis.call('PEXPIRE', K.timeouts .. ':' .. A.field .. ':rwlock_timeout:1', lease)
      redis.call('PEXPIRE', K.lock, lease)
      count = 1
    elseif mode == 'read' or (mode == 'write' and redis.call('HEXISTS', K.lock, A.field .. ':write') == 1) then
      count = redis.call('HINCRBY', K.lock, A.field, 1)
      local key = K.timeouts .. ':' .. A.field .. ':rwlock_timeout:' .. count
      redis.call('SET', key, 1)
      redis.call('PEXPIRE', key, lease)
      redis.call('PEXPIRE', K.lock, math.max(redis.call('PTTL', K.lock), lease))
    end
  else
    local writer = A.field .. ':write'
    if mode == false then
      redis.call('HSET', K.lock, 'mode', 'write')
      redis.call('HSET', K.lock, writer, 1)
      redis.call('PEXPIRE', K.lock, lease)
      count = 1
    elseif mode == 'write' and redis.call('HEXISTS', K.lock, writer) == 1 then
      count = redis.call('HINCRBY', K.lock, writer, 1)
      redis.call('PEXPIRE', K.lock, redis.call('PTTL', K.lock) + lease)
    end
  end
  if not count then
    local holders, total = rw_holders(K.lock, 100)
    if not holders then return total end
    local reply = {0, redis.call('PTTL', K.lock), total}
    for _, v in ipairs(holders) do reply[#reply + 1] = v end
    return reply
  end
  local fence
  if count == 1 then
    fence = redis.call('INCR', K.fence)
  else
    fence = tonumber(redis.call('GET', K.fence) or '0')
  end
  return {1, count, fence, redis.call('PTTL', K.lock), count == 1 and 1 or 0}
end, function(reply) return reply[1] == 1 end)  -- a busy answer has nothing to give back
