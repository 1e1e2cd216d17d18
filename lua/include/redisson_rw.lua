-- Shared by the redisson_rw_*.lua scripts: Redisson's RReadWriteLock (RedissonReadLock,
-- RedissonWriteLock). The hash under the bare name holds `mode` ("read" or "write"), each
-- reader's "<UUID>:<thread>" -> count and the writer's "<UUID>:<thread>:write" -> count;
-- every read hold n of a reader has its own lease key "<timeouts>:<field>:rwlock_timeout:<n>"
-- (<timeouts> is "{NAME}", Redisson's suffixName prefix: the slot of the bare name).

-- The fields other than `mode` with their counts, as a flat list (at most `limit` pairs),
-- and how many there are; nil and an error reply when the hash is no read-write lock.
local function rw_holders(key, limit)
  local all = redis.call('HGETALL', key)
  local out, total = {}, 0
  for i = 1, #all, 2 do
    if all[i] ~= 'mode' then
      if not tonumber(all[i + 1]) then return nil, redis.error_reply('MALFORMED ' .. key) end
      total = total + 1
      if total <= limit then
        out[#out + 1] = all[i]
        out[#out + 1] = all[i + 1]
      end
    end
  end
  return out, total
end

-- The hash's type and mode: an error reply for another type, or for a hash that is some
-- other program's data (a mode that is neither). A hash without `mode` is an RLock (or
-- other data): never turned into a read-write lock under its holder.
local function rw_mode(key)
  local err = bad_type(key, 'hash')
  if err then return nil, err end
  local mode = redis.call('HGET', key, 'mode')
  if mode and mode ~= 'read' and mode ~= 'write' then
    return nil, redis.error_reply('MALFORMED ' .. key)
  end
  if not mode and redis.call('EXISTS', key) == 1 then return 'other' end
  return mode or false
end

-- Redisson's unlock and forceUnlock messages go out as its client sends them: PUBLISH
-- (standalone, Sentinel) and SPUBLISH (its sharded mode on a Redis 7 cluster).
local function rw_announce(channel, message)
  redis.call('PUBLISH', channel, message)
  redis.pcall('SPUBLISH', channel, message)
end
