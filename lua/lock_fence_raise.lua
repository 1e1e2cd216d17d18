-- Raises a lock's fencing token to at least ARGV[1] (a quorum writes the token it hands out
-- back to a majority, so that the next majority, which shares a member with it, goes on
-- from there: redis/quorum.cpp).
-- KEYS[1] the fencing token (string, no TTL), ARGV[1] the token handed out
-- Reply: 1 (raised or already at least that); error "BADTYPE <type> <key>" otherwise.
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'string' then return redis.error_reply('BADTYPE ' .. t .. ' ' .. KEYS[1]) end
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if cur < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
