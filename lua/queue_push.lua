-- Schedules one item, due at server time + a delay or at an absolute time. The same id
-- again, while the item is still in the queue (scheduled, in flight or dead), changes
-- nothing. Wakes the consumers when the item is now the earliest.
-- KEYS: see queue_common.lua.
-- ARGV[1] queue channel, ARGV[2] 'delay' | 'at', ARGV[3] the delay in ms, or the due time
-- (Unix ms), ARGV[4] item id, ARGV[5] payload, ARGV[6] ms the reply record is kept.
-- Reply: {1, due_ms, now_ms} pushed; {0, due_ms, now_ms} a duplicate id: nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- KEYS[9] this request's reply record (see once in common.lua).
-- @include common.lua
-- @include queue_common.lua
return once(KEYS[9], ARGV[6], function()
local err = check_queue_keys(ARGV[1])
if err then return err end
local now = server_time().ms
local id = ARGV[4]
if redis.call('HEXISTS', KEYS[4], id) == 1 then
  local m = read_meta(id)
  if not m then return redis.error_reply('MALFORMED ' .. KEYS[4]) end
  return {0, m.due, now}
end
local due = tonumber(ARGV[3])
if ARGV[2] == 'delay' then due = now + due end
local seq = string.format('%016d', redis.call('HINCRBY', KEYS[1], 'seq', 1))
local first = earliest(KEYS[2])
redis.call('ZADD', KEYS[2], due, seq .. ':' .. id)
redis.call('HSET', KEYS[3], id, ARGV[5])
write_meta(id, {seq = seq, due = due, deliveries = 0, max = 0})
if not first or due < first then publish(ARGV[1], 'due') end
return {1, due, now}
end, function(r) return r[1] == 1 end)
