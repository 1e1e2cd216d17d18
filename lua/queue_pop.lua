-- Takes the due items, in due order (push order within a millisecond), after making the
-- items of expired leases due again: promotion and claim in one script, so that no crash
-- of anybody loses an item. 'take' removes the items (at-most-once); 'lease' moves one to
-- the in-flight set under a lease of its own (token), counting the delivery. An item that
-- has had --max-deliveries deliveries goes to the dead letters instead of out, and so
-- does one that cannot be delivered (malformed metadata, no payload), with the reason.
-- KEYS: see queue_common.lua.
-- @arg channel         queue channel
-- @arg mode            'take' | 'lease'
-- @arg count           most items to take
-- @arg visibility_ms   visibility (lease) ms
-- @arg max_deliveries  max deliveries (0 = none)
-- @arg token           lease token
-- @arg consumer        consumer (for inspect)
-- @arg reply_ttl       ms the reply record is kept
-- Reply: {1, now_ms, id, payload, due_ms, lateness_ms, deliveries, ...} items taken;
--        {0, now_ms, ms until the next item or lease expiry (-1: none)} nothing due;
--        error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
-- @key reply  this request's reply record (see once in common.lua): a repeat of the same
--             pop returns the same items and deliveries, counting no delivery twice
return once(K.reply, A.reply_ttl, function()
local err = check_queue_keys(A.channel)
if err then return err end
local now = server_time().ms
reclaim(now, A.channel)
local lease = A.mode == 'lease'
local want = tonumber(A.count)
local max = tonumber(A.max_deliveries)
local out = {1, now}
-- Buried items are bounded per call like reclaim's: with more, the reply says an item is
-- due now and the consumer calls again.
local buried = 0
while #out == 2 and buried < RECLAIM_BATCH do
  local due = redis.call('ZRANGEBYSCORE', K.scheduled, '-inf', now, 'WITHSCORES', 'LIMIT', 0, want)
  if #due == 0 then break end
  for i = 1, #due, 2 do
    local member, became_due = due[i], tonumber(due[i + 1])
    local id = id_of(member)
    local m, problem, payload
    if id then
      m, problem = read_meta(id)
    else
      id, problem = member, 'scheduled without a sequence number'
    end
    if m then
      payload = redis.call('HGET', K.payloads, id)
      if not payload then problem = 'no payload' end
    end
    if problem then
      bury(id, member, m, became_due, problem)
      buried = buried + 1
    elseif lease and max > 0 and m.deliveries >= max then
      redis.call('ZREM', K.scheduled, member)
      m.max = max  -- what --dead reports as the reason
      write_meta(id, m)
      redis.call('RPUSH', K.dead, id)
    else
      m.deliveries = m.deliveries + 1
      if lease then
        redis.call('ZREM', K.scheduled, member)
        redis.call('ZADD', K.in_flight, now + tonumber(A.visibility_ms), id)
        redis.call('HSET', K.leases, id, A.token .. ' ' .. A.consumer)
        m.max = max
        write_meta(id, m)
      else
        drop_item(id, member)
      end
      for _, v in ipairs({id, payload, m.due, math.max(now - became_due, 0), m.deliveries}) do
        out[#out + 1] = v
      end
    end
  end
end
if #out > 2 then return out end
local next_at = earliest(K.scheduled)
local expiry = earliest(K.in_flight)
if expiry and (not next_at or expiry < next_at) then next_at = expiry end
if not next_at then return {0, now, -1} end
return {0, now, math.max(next_at - now, 0)}
end, function(r) return r[1] == 1 end)
