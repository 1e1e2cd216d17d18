-- Extends an RFairLock hold (RedissonBaseLock.renewExpirationAsync: PEXPIRE while the field
-- is there) iff it is still the owner's and, for an exec hold, that exec's; never shortens.
-- @key lock      the lock hash (the bare name)
-- @key exec      rlock's exec hold id (PREFIX redisson:{NAME}:fexec)
-- @arg field     the owner's field
-- @arg lease     lease in ms
-- @arg hold_id   the exec hold's id, "" for a `lock` hold
-- Reply: the lease left in ms when renewed; 0 when the hold is gone.
if redis.call('TYPE', K.lock)['ok'] ~= 'hash' then return 0 end
if redis.call('hexists', K.lock, A.field) == 0 then return 0 end
if A.hold_id ~= '' then
  if redis.call('TYPE', K.exec)['ok'] ~= 'string' or redis.call('GET', K.exec) ~= A.hold_id then return 0 end
  redis.call('SET', K.exec, A.hold_id, 'PX', A.lease)
end
if redis.call('PTTL', K.lock) < tonumber(A.lease) then redis.call('pexpire', K.lock, A.lease) end
return redis.call('PTTL', K.lock)
