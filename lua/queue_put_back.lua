-- Puts back items that a pop took but could not print (stdout failed): scheduled items
-- due as they were, ahead of the items pushed for the same millisecond; dead letters at
-- the end of the dead letters, in their order (LPUSH would put them in front, but it is a
-- right the documented ACL does not give). An item whose id is in the queue again (pushed
-- meanwhile) is left as it is. Not retried after a lost reply: a consumer could take an
-- item put back in between, and the retry would deliver it twice.
-- KEYS: see queue_common.lua.
-- @arg channel   queue channel
-- @arg where     'scheduled' | 'dead'
-- @arg items...  per item: id, '1' | '0' (it has a payload), payload, schedule score
--                (server ms), due ms, deliveries, reason ('': none)
-- Reply: {items put back}; error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
local err = check_queue_keys(A.channel)
if err then return err end
local FIELDS = 7
local dead = A.where == 'dead'
local first = earliest(K.scheduled)
local put = 0
local items = A.items
for i = 1, #items - FIELDS + 1, FIELDS do
  local id, has_payload, payload, score, due, deliveries, reason = unpack(items, i, i + FIELDS - 1)
  score = tonumber(score)
  if redis.call('HEXISTS', K.metadata, id) == 0 then
    if has_payload == '1' then redis.call('HSET', K.payloads, id, payload) end
    local m = {seq = NO_SEQ, due = tonumber(due), deliveries = tonumber(deliveries), max = 0}
    if reason ~= '' then m.reason = reason end
    write_meta(id, m)
    if dead then
      redis.call('RPUSH', K.dead, id)
    else
      redis.call('ZADD', K.scheduled, score, member_of(id, m))
    end
    put = put + 1
  end
end
if put > 0 then redis.call('HINCRBY', K.main, 'seq', 0) end
local now_first = earliest(K.scheduled)
if now_first and (not first or now_first < first) then publish(A.channel, 'due') end
return {put}
