-- Extends the lease of a lock if, and only if, ARGV[1] still holds it.
-- KEYS[1] lock hash
-- ARGV[1] owner, ARGV[2] lease in ms
-- Reply: 1 when renewed; 0 when the owner no longer holds it (expired, deleted, forced,
--        or the key now holds another type).
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
