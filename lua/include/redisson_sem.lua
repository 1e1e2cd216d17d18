-- Shared by the RPermitExpirableSemaphore scripts (lua/redisson_sem_*.lua): Redisson's
-- layout (RedissonPermitExpirableSemaphore.java): the bare name holds the free permits
-- (LongCodec), {NAME}:timeout maps each permit id (its 16 bytes, the hex id decoded) to
-- the epoch ms at which it expires (922337203685477: never), and every change is announced
-- on redisson_sc:{NAME} as Redisson does. rlock's expiries are the server's clock.

-- Redisson's nonExpirableTimeout: a permit taken without a lease.
local NON_EXPIRABLE = 922337203685477

local function id_bytes(hex)
  return (hex:gsub('..', function(x) return string.char(tonumber(x, 16)) end))
end
local function id_hex(bytes)
  return (bytes:gsub('.', function(c) return string.format('%02x', string.byte(c)) end))
end

-- Redisson publishes with PUBLISH, or SPUBLISH in its sharded mode; rlock does both so
-- that a Java waiter in either mode and rlock's own are woken.
local function announce(channel, message)
  redis.call('PUBLISH', channel, message)
  redis.call('SPUBLISH', channel, message)
end

-- The permits of `sem` free now: nil when the semaphore was never set; an error reply when
-- its value is not a whole number (not a semaphore: untouched).
local function free_permits(sem)
  local v = redis.call('GET', sem)
  if v == false then return nil end
  if not string.match(v, '^%-?%d+$') or #v > 16 then
    return nil, redis.error_reply('MALFORMED ' .. sem)
  end
  return tonumber(v)
end

-- Expired permits back to the free count, announced (every Redisson script does this first).
local function reclaim(sem, timeouts, channel, now_ms)
  local expired = redis.call('ZRANGEBYSCORE', timeouts, 0, now_ms)
  if #expired == 0 then return end
  for i = 1, #expired, 1000 do
    redis.call('ZREM', timeouts, unpack(expired, i, math.min(i + 999, #expired)))
  end
  local value = redis.call('INCRBY', sem, #expired)
  if value > 0 then announce(channel, value) end
end

-- The server's time (ms) once the keys are checked and expired permits reclaimed, as every
-- Redisson script begins; nil and an error reply when a key is not the semaphore's.
local function opened(sem, timeouts, channel)
  local err = first_bad_type({{sem, 'string'}, {timeouts, 'zset'}})
  if err then return nil, err end
  local _, bad = free_permits(sem)
  if bad then return nil, bad end
  local now = server_time().ms
  reclaim(sem, timeouts, channel, now)
  return now
end
