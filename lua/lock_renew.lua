-- Extends the lease of a hold if, and only if, it is still held: by ARGV[1], and for an
-- exec hold (ARGV[3] non-empty) by that very exec. Never shortens the lock's expiry.
-- KEYS[1] lock hash, KEYS[2] exec hold id
-- ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] exec hold id or ""
-- Reply: pttl_ms of the lock after renewal (> 0) when renewed; 0 when the hold is gone
--        (expired, deleted, forced, or the keys now hold other types).
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
if ARGV[3] ~= '' then
  if redis.call('TYPE', KEYS[2])['ok'] ~= 'string' then return 0 end
  if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 0 end
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return redis.call('PTTL', KEYS[1])
