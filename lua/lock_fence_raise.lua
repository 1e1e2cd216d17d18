-- Makes token, the fencing token a quorum hands out, the lock's token on this member (the
-- quorum writes it back to a majority, so that the next majority, which shares a member
-- with it, goes on from there: redis/quorum.cpp). Where the owner holds the lock
-- exclusively, the token becomes exactly token: this member's own counter may have gone
-- further when it granted this hold, and a re-entry reports the counter, which must be the
-- hold's token on every member. Lowering it loses nothing: every token handed out before
-- was written back to a majority, which shares a member with the one that gave token (so
-- token is at least that token), and no grant advances it here while this hold lasts.
-- Elsewhere the token is only raised.
-- @key fence  the fencing token (string, no TTL)
-- @key lock   the lock hash
-- @arg token  the token handed out
-- @arg owner  the owner
-- Reply: 1 (set, raised or already at least that); error "BADTYPE <type> <key>" otherwise.
local t = redis.call('TYPE', K.fence)['ok']
if t ~= 'none' and t ~= 'string' then return redis.error_reply('BADTYPE ' .. t .. ' ' .. K.fence) end
local cur = tonumber(redis.call('GET', K.fence) or '0') or 0
local token = tonumber(A.token)
local holds = redis.call('TYPE', K.lock)['ok'] == 'hash'
  and tonumber(redis.call('HGET', K.lock, A.owner) or '0') or 0
if cur < token or (cur > token and holds >= 1) then
  redis.call('SET', K.fence, A.token)
end
return 1
