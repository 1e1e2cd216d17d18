-- Releases one level of `field`'s read lock (share = "read") or write lock ("write") as
-- RedissonReadLock / RedissonWriteLock.unlockInnerAsync do, with their messages on
-- Redisson's channel: a read unlock that frees the lock publishes "0" (UNLOCK_MESSAGE), a
-- write unlock "1" (READ_UNLOCK_MESSAGE: every waiter tries). A read unlock that leaves
-- other holds sets the hash's lease to the longest of their read holds' leases, as
-- Redisson does. With `give_up` (a wait giving up), only the level that the attempt
-- recorded in `taken` granted is released, once, and a late run of it takes nothing.
-- @key lock       the hash under the bare name
-- @key timeouts   "{NAME}": the read holds' lease keys start with it
-- @key taken      the granting attempt's reply record, or rlock's fence key when unused
-- @key [reply]    this release's reply record
-- @arg share      read or write
-- @arg field      "<UUID>:<thread>" (the write lock's field is it + ":write")
-- @arg channel    redisson_rwlock:{NAME}
-- @arg lease      a re-entered write lock's lease after the release (ms); 0: as it is
-- @arg give_up    1: release only what `taken` recorded
-- @arg reply_ttl  how long the reply record lives (ms)
-- Reply: {1, levels left} released; {0, field, count, ...} not held by `field` (at most
--        100 holders); error "BADTYPE <type> <key>" / "MALFORMED <key>".
-- @include common.lua
-- @include redisson_rw.lua
local denied = first_denied({{'HSET', K.lock, 'f', '1'}, {'HDEL', K.lock, 'f'}, {'DEL', K.lock}, {'DEL', K.timeouts},
  {'PEXPIRE', K.lock, '1'}, {'PUBLISH', A.channel, '0'}, {'SPUBLISH', A.channel, '0'}, {'SET', K.taken, 'v'},
  {'HGETALL', K.lock}, {'PTTL', K.timeouts}})
if denied then return denied end

local function busy()
  local holders, total = rw_holders(K.lock, 100)
  if not holders then return total end
  local reply = {0}
  for _, v in ipairs(holders) do reply[#reply + 1] = v end
  return reply
end

local function release_read(mode)
  if redis.call('HEXISTS', K.lock, A.field) == 0 then return busy() end
  local counter = redis.call('HINCRBY', K.lock, A.field, -1)
  if counter == 0 then redis.call('HDEL', K.lock, A.field) end
  redis.call('DEL', K.timeouts .. ':' .. A.field .. ':rwlock_timeout:' .. (counter + 1))
  if redis.call('HLEN', K.lock) > 1 then
    local max_remain = -3
    for _, key in ipairs(redis.call('HKEYS', K.lock)) do
      local n = tonumber(redis.call('HGET', K.lock, key))
      if type(n) == 'number' then
        for i = n, 1, -1 do
          max_remain = math.max(redis.call('PTTL', K.timeouts .. ':' .. key .. ':rwlock_timeout:' .. i), max_remain)
        end
      end
    end
    if max_remain > 0 then
      redis.call('PEXPIRE', K.lock, max_remain)
      return {1, counter}
    end
    if mode == 'write' then return {1, counter} end
  end
  redis.call('DEL', K.lock)
  rw_announce(A.channel, '0')
  return {1, counter}
end

local function release_write(mode)
  local writer = A.field .. ':write'
  if mode ~= 'write' or redis.call('HEXISTS', K.lock, writer) == 0 then return busy() end
  local counter = redis.call('HINCRBY', K.lock, writer, -1)
  if counter > 0 then
    if tonumber(A.lease) > 0 then redis.call('PEXPIRE', K.lock, A.lease) end
    return {1, counter}
  end
  redis.call('HDEL', K.lock, writer)
  if redis.call('HLEN', K.lock) == 1 then
    redis.call('DEL', K.lock)
    rw_announce(A.channel, '1')
  else
    -- The writer's own read holds remain.
    redis.call('HSET', K.lock, 'mode', 'read')
  end
  return {1, 0}
end

return once(K.reply, A.reply_ttl, function()
  if A.give_up == '1' then
    -- The record now says "given up" ({-1}): a late run of the attempt (still on its way,
    -- or repeated) takes nothing, and a second give-up releases nothing.
    local seen = redis.call('GET', K.taken)
    redis.call('SET', K.taken, cmsgpack.pack({-1}), 'PX', tonumber(A.reply_ttl))
    if not seen or cmsgpack.unpack(seen)[1] ~= 1 then return {0} end
  end
  local mode, bad = rw_mode(K.lock)
  if bad then return bad end
  if mode == false then
    -- Redisson announces a free lock all the same, for a waiter that missed its release.
    rw_announce(A.channel, A.share == 'read' and '0' or '1')
    return {0}
  end
  if mode == 'other' then return busy() end
  if A.share == 'read' then return release_read(mode) end
  return release_write(mode)
end)
