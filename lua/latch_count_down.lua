-- Counts a latch down by ARGV[1], never below zero (KEYS: see latch_common.lua). With an
-- id, a participant counts once: a repeated id changes nothing. When the count reaches 0
-- the waiters are woken on ARGV[3], and the latch stays as a count-0 marker until its
-- expiry, or for ARGV[4] ms when it had none (so that a finished latch is told apart
-- from one never set).
-- ARGV[1] amount (>= 1), ARGV[2] participant id ('' = none), ARGV[3] latch channel,
-- ARGV[4] how long a reached latch without expiry is kept (ms), ARGV[5] ms the reply
-- record is kept
-- Reply: {1, count, applied} counted down (applied = how much, 0 when it was at 0);
--        {2, count} the id has counted down already: nothing changed;
--        {-1} there is no such latch (never set, or expired): nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- KEYS[3] this request's reply record (see once in common.lua): a repeat of the same
-- request gets the first run's reply (what this call applied) and changes nothing.
-- @include common.lua
-- @include latch_common.lua
return once(KEYS[3], ARGV[5], function()
local err, count = check_latch_keys(ARGV[3])
if err then return err end
if not count then return {-1} end
local id = ARGV[2]
if id ~= '' and redis.call('SISMEMBER', KEYS[2], id) == 1 then return {2, count} end
local applied = math.min(tonumber(ARGV[1]), count)
if applied == 0 then return {1, 0, 0} end
local left = redis.call('DECRBY', KEYS[1], applied)
if left == 0 and redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
if id ~= '' then redis.call('SADD', KEYS[2], id) end
-- The ids go with the count (or a moment later: Redis 7.0's clock moves inside a script,
-- and ids without their count are never read). A count whose expiry is this very
-- millisecond has a PTTL of 0 (it is gone only once that ms has passed): its ids get 1 ms,
-- not no expiry at all (a `ttl > 0` test left them forever), nor PEXPIRE 0 (which would
-- delete them while the count still lives, and let an id count twice).
local ttl = redis.call('PTTL', KEYS[1])
if ttl >= 0 and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], math.max(ttl, 1)) end
if left == 0 then publish(ARGV[3], 'zero') end
return {1, left, applied}
end, function(r) return r[1] == 1 and r[3] > 0 end)
