-- Takes `count` anonymous permits of an RSemaphore (RedissonSemaphore tryAcquireAsync: DECRBY
-- when enough are free); a semaphore never set is set to `capacity` first (trySetPermits,
-- announced), or, with `capacity` 0, left unset and read as no permits free (as Java's
-- tryAcquire reads a missing name). Redisson's permits have no id: the acquisition's reply
-- record is what makes a repeat after a lost reply take nothing twice, and what a give-up
-- looks for.
-- @key sem        the bare name: free permits (LongCodec)
-- @key [reply]    the acquisition's reply record (see once in common.lua)
-- @arg channel    redisson_sc:{NAME}
-- @arg count      permits to take
-- @arg capacity   --permits: set when the semaphore was never set; "0": never set it
-- @arg reply_ttl  ms the reply record is kept
-- Reply: {1, free} taken (free: what is left); {0, free} not enough free; error "BADTYPE",
-- "MALFORMED" and no change.
-- @include common.lua
-- @include redisson_sem.lua
return once(K.reply, A.reply_ttl, function()
local err = first_bad_type({{K.sem, 'string'}})
if err then return err end
local free, bad = free_permits(K.sem)
if bad then return bad end
if free == nil and A.capacity ~= '0' then
  free = tonumber(A.capacity)
  redis.call('SET', K.sem, free)
  announce(A.channel, free)
end
free = free or 0
if free >= tonumber(A.count) then
  return {1, redis.call('DECRBY', K.sem, A.count)}
end
return {0, free}
end, function(reply) return reply[1] == 1 end)
