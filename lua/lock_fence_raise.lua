-- Makes ARGV[1], the fencing token a quorum hands out, the lock's token on this member (the
-- quorum writes it back to a majority, so that the next majority, which shares a member
-- with it, goes on from there: redis/quorum.cpp). Where the owner (ARGV[2]) holds the lock
-- exclusively, the token becomes exactly ARGV[1]: this member's own counter may have gone
-- further when it granted this hold, and a re-entry reports the counter, which must be the
-- hold's token on every member. Lowering it loses nothing: every token handed out before
-- was written back to a majority, which shares a member with the one that gave ARGV[1] (so
-- ARGV[1] is at least that token), and no grant advances it here while this hold lasts.
-- Elsewhere the token is only raised.
-- KEYS[1] the fencing token (string, no TTL), KEYS[2] the lock hash; ARGV[1] the token
-- handed out, ARGV[2] the owner
-- Reply: 1 (set, raised or already at least that); error "BADTYPE <type> <key>" otherwise.
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'string' then return redis.error_reply('BADTYPE ' .. t .. ' ' .. KEYS[1]) end
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local token = tonumber(ARGV[1])
local holds = redis.call('TYPE', KEYS[2])['ok'] == 'hash'
  and tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') or 0
if cur < token or (cur > token and holds >= 1) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1
