-- Puts back items that a pop took but could not print (stdout failed): scheduled items
-- due as they were, ahead of the items pushed for the same millisecond; dead letters at
-- the end of the dead letters, in their order (LPUSH would put them in front, but it is a
-- right the documented ACL does not give). An item whose id is in the queue again (pushed
-- meanwhile) is left as it is. Not retried after a lost reply: a consumer could take an
-- item put back in between, and the retry would deliver it twice.
-- KEYS: see queue_common.lua.
-- ARGV[1] queue channel, ARGV[2] 'scheduled' | 'dead', then per item: id, '1' | '0' (it
-- has a payload), payload, schedule score (server ms), due ms, deliveries, reason ('': none).
-- Reply: {items put back}; error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
local err = check_queue_keys(ARGV[1])
if err then return err end
local FIELDS = 7
local dead = ARGV[2] == 'dead'
local first = earliest(KEYS[2])
local put = 0
for i = 3, #ARGV - FIELDS + 1, FIELDS do
  local id, score = ARGV[i], tonumber(ARGV[i + 3])
  if redis.call('HEXISTS', KEYS[4], id) == 0 then
    if ARGV[i + 1] == '1' then redis.call('HSET', KEYS[3], id, ARGV[i + 2]) end
    local m = {seq = NO_SEQ, due = tonumber(ARGV[i + 4]), deliveries = tonumber(ARGV[i + 5]),
      max = 0}
    if ARGV[i + 6] ~= '' then m.reason = ARGV[i + 6] end
    write_meta(id, m)
    if dead then
      redis.call('RPUSH', KEYS[7], id)
    else
      redis.call('ZADD', KEYS[2], score, member_of(id, m))
    end
    put = put + 1
  end
end
if put > 0 then redis.call('HINCRBY', KEYS[1], 'seq', 0) end
local now_first = earliest(KEYS[2])
if now_first and (not first or now_first < first) then publish(ARGV[1], 'due') end
return {put}
