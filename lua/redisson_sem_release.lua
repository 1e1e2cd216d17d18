-- Gives back the permits of an RPermitExpirableSemaphore named by `ids` that are still
-- taken (RedissonPermitExpirableSemaphore tryReleaseAsync); `force`: every permit.
-- Released permits are announced with their number, as tryRelease(List) does.
-- @key sem       the bare name: free permits
-- @key timeouts  {NAME}:timeout
-- @arg channel   redisson_sc:{NAME}
-- @key [reply]   this request's reply record (see once in common.lua): a repeat after a
--                 lost reply gets the first run's reply; a clean-up goes without
-- @arg force      "1": free every permit (ids unused)
-- @arg reply_ttl  ms the reply record is kept
-- @arg ids...     hex ids
-- Reply: {released, hex id not held, ...}; force: {released, hex id, ms left (-1: no
--        expiry), ...}.
-- @include common.lua
-- @include redisson_sem.lua
return once(K.reply, A.reply_ttl, function()
local now, err = opened(K.sem, K.timeouts, A.channel)
if not now then return err end
local out = {0}
if A.force == '1' then
  local all = redis.call('ZRANGE', K.timeouts, 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    out[#out + 1] = id_hex(all[i])
    out[#out + 1] = tonumber(all[i + 1]) >= NON_EXPIRABLE and -1 or math.max(tonumber(all[i + 1]) - now, 0)
  end
  out[1] = #all / 2
  redis.call('DEL', K.timeouts)
else
  for _, id in ipairs(A.ids) do
    if redis.call('ZREM', K.timeouts, id_bytes(id)) == 1 then
      out[1] = out[1] + 1
    else
      out[#out + 1] = id
    end
  end
end
if out[1] > 0 then
  redis.call('INCRBY', K.sem, out[1])
  announce(A.channel, out[1])
end
return out
end, function(reply) return reply[1] > 0 end)
