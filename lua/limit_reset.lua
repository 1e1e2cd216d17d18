-- Clears a rate limiter: its config and every bucket (as `unlock --force` does for a lock).
-- KEYS[1] limiter (hash), KEYS[2] clients (zset): see limit_decide.lua
-- ARGV[1] ms the reply record is kept.
-- Reply: {existed 0|1, client buckets dropped}; error "BADTYPE <type> <key>" / NOPERM and
--        no change when a key is not a limiter's.
-- KEYS[3] this request's reply record (see once in common.lua): a reset repeated after a
-- lost reply reports what it removed, not "there was none".
-- @include common.lua
return once(KEYS[3], ARGV[1], function()
local denied = first_denied({{'DEL', KEYS[1]}, {'DEL', KEYS[2]}})
  or first_denied({{'TYPE', KEYS[1]}, {'EXISTS', KEYS[1]}, {'ZCARD', KEYS[2]}})
if denied then return denied end
local err = first_bad_type({'hash', 'zset'})
if err then return err end
local existed = redis.call('EXISTS', KEYS[1])
local clients = redis.call('ZCARD', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
return {existed, clients}
end, function(r) return r[1] == 1 or r[2] > 0 end)
