-- Schedules one item, due at server time + a delay or at an absolute time. The same id
-- again, while the item is still in the queue (scheduled, in flight or dead), changes
-- nothing. Wakes the consumers when the item is now the earliest.
-- KEYS: see queue_common.lua.
-- @arg channel    queue channel
-- @arg mode       'delay' | 'at'
-- @arg due        the delay in ms, or the due time (Unix ms)
-- @arg id         item id
-- @arg payload    payload
-- @arg reply_ttl  ms the reply record is kept
-- Reply: {1, due_ms, now_ms} pushed; {0, due_ms, now_ms} a duplicate id: nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
-- @key reply  this request's reply record (see once in common.lua)
return once(K.reply, A.reply_ttl, function()
local err = check_queue_keys(A.channel)
if err then return err end
local now = server_time().ms
local id = A.id
if redis.call('HEXISTS', K.metadata, id) == 1 then
  local m = read_meta(id)
  if not m then return redis.error_reply('MALFORMED ' .. K.metadata) end
  return {0, m.due, now}
end
local due = tonumber(A.due)
if A.mode == 'delay' then due = now + due end
local seq = string.format('%016d', redis.call('HINCRBY', K.main, 'seq', 1))
local first = earliest(K.scheduled)
redis.call('ZADD', K.scheduled, due, seq .. ':' .. id)
redis.call('HSET', K.payloads, id, A.payload)
write_meta(id, {seq = seq, due = due, deliveries = 0, max = 0})
if not first or due < first then publish(A.channel, 'due') end
return {1, due, now}
end, function(r) return r[1] == 1 end)
