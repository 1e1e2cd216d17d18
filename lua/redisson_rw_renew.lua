-- Extends `field`'s read holds (share = "read": every one of its read holds' lease keys
-- and the hash, as Redisson's ReadLockTask does) or its write hold ("write": the hash, as
-- LockTask does) iff it still holds them; never shortens the hash's lease.
-- @key lock       the hash under the bare name
-- @key timeouts   "{NAME}": the read holds' lease keys start with it
-- @arg share      read or write
-- @arg field      "<UUID>:<thread>" (the write lock's field is it + ":write")
-- @arg lease      lease in ms
-- Reply: the hash's remaining lease (ms, > 0) when renewed; 0 when the hold is gone.
-- @include common.lua
local denied = first_denied({{'PEXPIRE', K.lock, '1'}, {'PEXPIRE', K.timeouts, '1'}, {'HGET', K.lock, 'f'},
  {'PTTL', K.lock}})
if denied then return denied end
if redis.call('TYPE', K.lock)['ok'] ~= 'hash' then return 0 end
local mode = redis.call('HGET', K.lock, 'mode')
if A.share == 'read' then
  local counter = tonumber(redis.call('HGET', K.lock, A.field))
  if mode ~= 'read' and mode ~= 'write' or not counter then return 0 end
  for c = counter, 1, -1 do
    redis.call('PEXPIRE', K.timeouts .. ':' .. A.field .. ':rwlock_timeout:' .. c, A.lease)
  end
elseif mode ~= 'write' or redis.call('HEXISTS', K.lock, A.field .. ':write') == 0 then
  return 0
end
return extend(K.lock, A.lease)
