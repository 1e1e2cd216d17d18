-- Removes a read-write lock whoever holds it, as RedissonReadLock.forceUnlockAsync (mode
-- read: publishes "0") or RedissonWriteLock.forceUnlockAsync (mode write: publishes "1")
-- does, and its read holds' lease keys with it. A hash without `mode` is left alone.
-- @key lock       the hash under the bare name
-- @key timeouts   "{NAME}": the read holds' lease keys start with it
-- @arg channel    redisson_rwlock:{NAME}
-- Reply: {} no read-write lock there; {mode, field, count, ...} removed (every holder);
--        error "BADTYPE <type> <key>" / "MALFORMED <key>".
-- @include common.lua
-- @include redisson_rw.lua
local denied = first_denied({{'DEL', K.lock}, {'DEL', K.timeouts}, {'PUBLISH', A.channel, '0'},
  {'SPUBLISH', A.channel, '0'}, {'HGETALL', K.lock}})
if denied then return denied end
if redis.call('TYPE', K.lock)['ok'] ~= 'hash' then return {} end
local mode = redis.call('HGET', K.lock, 'mode')
if mode ~= 'read' and mode ~= 'write' then return {} end
local holders = rw_holders(K.lock, 100000)
if not holders then return redis.error_reply('MALFORMED ' .. K.lock) end
redis.call('DEL', K.lock)
for i = 1, #holders, 2 do
  -- A count is a few levels; a bound keeps another program's number from stalling the server.
  for n = math.min(tonumber(holders[i + 1]), 10000), 1, -1 do
    redis.call('DEL', K.timeouts .. ':' .. holders[i] .. ':rwlock_timeout:' .. n)
  end
end
rw_announce(A.channel, mode == 'read' and '0' or '1')
local reply = {mode}
for _, v in ipairs(holders) do reply[#reply + 1] = v end
return reply
