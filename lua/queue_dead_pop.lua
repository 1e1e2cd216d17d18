-- Takes items off the dead-letter list, oldest first, and forgets them.
-- KEYS: see queue_common.lua.
-- @arg channel    queue channel
-- @arg count      most items to take
-- @arg reply_ttl  ms the reply record is kept
-- Reply: {now_ms, id, payload (nil when missing), due_ms, deliveries, reason, ...}: the
--        reason a script stored, else the deliveries that made it a dead letter;
--        error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
-- @key reply  this request's reply record (see once in common.lua)
return once(K.reply, A.reply_ttl, function()
local err = check_queue_keys(A.channel)
if err then return err end
local out = {server_time().ms}
for _ = 1, tonumber(A.count) do
  local id = redis.call('LPOP', K.dead)
  if not id then break end
  local m, problem = read_meta(id)
  local reason = problem
  if m then
    reason = m.reason or string.format('delivered %d times', m.deliveries)
    if not m.reason and m.max > 0 then
      reason = string.format('%s (--max-deliveries %d)', reason, m.max)
    end
  else
    m = {due = 0, deliveries = 0}
  end
  local payload = redis.call('HGET', K.payloads, id)
  for _, v in ipairs({id, payload, m.due, m.deliveries, reason}) do out[#out + 1] = v end
  drop_item(id, nil)
end
return out
end, function(r) return #r > 1 end)
