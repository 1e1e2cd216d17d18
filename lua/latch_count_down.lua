-- Counts a latch down by amount, never below zero (KEYS: see latch_common.lua, then reply).
-- With an id, a participant counts once: a repeated id changes nothing. When the count
-- reaches 0 the waiters are woken on channel, and the latch stays as a count-0 marker until
-- its expiry, or for keep_ms when it had none (so that a finished latch is told apart from
-- one never set).
-- @arg amount     (>= 1)
-- @arg id         participant id ('' = none)
-- @arg channel    latch channel
-- @arg keep_ms    how long a reached latch without expiry is kept (ms)
-- @arg reply_ttl  ms the reply record is kept
-- @arg redisson   '1': Redisson's RCountDownLatch (see latch_common.lua): at zero the count
--                 and the ids are deleted, and "0" is announced, as countDown does
-- Reply: {1, count, applied} counted down (applied = how much, 0 when it was at 0);
--        {2, count} the id has counted down already: nothing changed;
--        {-1} there is no such latch (never set, or expired): nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include common.lua
-- @include latch_common.lua
-- @key reply  this request's reply record (see once in common.lua): a repeat of the same
--             request gets the first run's reply (what this call applied) and changes nothing
return once(K.reply, A.reply_ttl, function()
local err, count = check_latch_keys(A.channel)
if err then return err end
if not count then return {-1} end
local id = A.id
if id ~= '' and redis.call('SISMEMBER', K.ids, id) == 1 then return {2, count} end
local applied = math.min(tonumber(A.amount), count)
if applied == 0 then return {1, 0, 0} end
local left = redis.call('DECRBY', K.count, applied)
if left == 0 and redisson then
  redis.call('DEL', K.count, K.ids)
  announce(A.channel, nil, '0')
  return {1, 0, applied}
end
if left == 0 and redis.call('PTTL', K.count) < 0 then
  redis.call('PEXPIRE', K.count, A.keep_ms)
end
if id ~= '' then redis.call('SADD', K.ids, id) end
-- The ids go with the count (or a moment later: Redis 7.0's clock moves inside a script,
-- and ids without their count are never read). A count whose expiry is this very
-- millisecond has a PTTL of 0 (it is gone only once that ms has passed): its ids get 1 ms,
-- not no expiry at all (a `ttl > 0` test left them forever), nor PEXPIRE 0 (which would
-- delete them while the count still lives, and let an id count twice).
local ttl = redis.call('PTTL', K.count)
if ttl >= 0 and redis.call('EXISTS', K.ids) == 1 then redis.call('PEXPIRE', K.ids, math.max(ttl, 1)) end
if left == 0 then announce(A.channel, 'zero') end
return {1, left, applied}
end, function(r) return r[1] == 1 and r[3] > 0 end)
