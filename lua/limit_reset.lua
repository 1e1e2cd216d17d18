-- Clears a rate limiter: its config and every bucket (as `unlock --force` does for a lock).
-- @key limiter    (hash): see limit_decide.lua
-- @key clients    (zset): see limit_decide.lua
-- @key reply      this request's reply record (see once in common.lua): a reset repeated
--                 after a lost reply reports what it removed, not "there was none"
-- @arg reply_ttl  ms the reply record is kept
-- Reply: {existed 0|1, client buckets dropped}; error "BADTYPE <type> <key>" / NOPERM and
--        no change when a key is not a limiter's.
-- @include common.lua
return once(K.reply, A.reply_ttl, function()
local denied = first_denied({{'DEL', K.limiter}, {'DEL', K.clients}})
  or first_denied({{'TYPE', K.limiter}, {'EXISTS', K.limiter}, {'ZCARD', K.clients}})
if denied then return denied end
local err = first_bad_type({{K.limiter, 'hash'}, {K.clients, 'zset'}})
if err then return err end
local existed = redis.call('EXISTS', K.limiter)
local clients = redis.call('ZCARD', K.clients)
redis.call('DEL', K.limiter, K.clients)
return {existed, clients}
end, function(r) return r[1] == 1 or r[2] > 0 end)
