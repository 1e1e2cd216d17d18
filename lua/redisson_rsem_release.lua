-- Gives `count` anonymous permits back to an RSemaphore (RedissonSemaphore releaseAsync:
-- INCRBY, the new free count announced). `abandon`: only when the acquisition's reply record
-- `taken` says they were taken (a wait given up after a lost reply), which is removed.
-- `sem release --count` gives back no acquisition's: its `taken` is a key nothing writes.
-- @key sem        the bare name: free permits (LongCodec)
-- @key taken      the acquisition's reply record
-- @key [reply]    this release's reply record (see once in common.lua)
-- @arg channel    redisson_sc:{NAME}
-- @arg count      permits to give back
-- @arg abandon    "1": only if `taken` is there
-- @arg reply_ttl  ms the reply record is kept
-- Reply: {released, free}.
-- @include common.lua
-- @include redisson_sem.lua
return once(K.reply, A.reply_ttl, function()
local err = first_bad_type({{K.sem, 'string'}})
if err then return err end
local free, bad = free_permits(K.sem)
if bad then return bad end
local had = redis.call('DEL', K.taken)
if A.abandon == '1' and had == 0 then return {0, free or 0} end
local value = redis.call('INCRBY', K.sem, A.count)
announce(A.channel, value)
return {tonumber(A.count), value}
end, function(reply) return reply[1] > 0 end)
