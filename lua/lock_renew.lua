-- Extends the lease of a hold if, and only if, it is still held: by owner, and for an exec
-- hold (hold_id non-empty) by that very exec; a shared hold (reader = its reader id) by its
-- own reader entry. Never shortens an expiry.
-- @key lock             lock hash (these four as in lock_common.lua)
-- @key exec             exec hold id
-- @key readers          readers
-- @key reader_expiries  reader expiries
-- @key notes            the hold's notes (lasts as long as the exclusive hold)
-- @key policy           queue policies (lua/include/queue_policy.lua)
-- @arg owner            the owner
-- @arg lease            lease in ms
-- @arg hold_id          exec hold id or ""
-- @arg reader           reader id or ""
-- Reply: the hold's remaining lease in ms (> 0) when renewed; 0 when the hold is gone
--        (expired, deleted, forced, or the keys now hold other types); -1 when the exec
--        hold was cancelled by a newer --cancel-running request (not renewed: it stays held
--        until released or until its lease ends).
-- On a quorum (prim/lock_quorum.cpp):
-- @quorum renew
-- @include common.lua
local denied = first_denied({{'PEXPIRE', K.lock, '1'}, {'SET', K.exec, '1'}, {'HSET', K.readers, 'f', '1'},
  {'ZADD', K.reader_expiries, '1', 'm'}, {'PEXPIRE', K.reader_expiries, '1'}, {'PEXPIRE', K.notes, '1'},
  {'PEXPIRE', K.policy, '1'}})
  or first_denied({{'TIME'}, {'TYPE', K.lock}, {'HEXISTS', K.lock, 'f'}, {'GET', K.exec}, {'HGET', K.readers, 'f'},
    {'PTTL', K.lock}, {'PTTL', K.notes}, {'TYPE', K.policy}, {'HGET', K.policy, 'f'}, {'PTTL', K.policy}})
if denied then return denied end
local lease = tonumber(A.lease)
if A.reader ~= '' then
  if redis.call('TYPE', K.readers)['ok'] ~= 'hash' then return 0 end
  local t4 = redis.call('TYPE', K.reader_expiries)['ok']
  if t4 ~= 'zset' and t4 ~= 'none' then return 0 end
  local v = redis.call('HGET', K.readers, A.reader)
  local c, e = string.match(v or '', '^(%d+):(%d+)$')
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if not c or tonumber(e) <= now_ms then return 0 end
  local expiry = math.max(tonumber(e), now_ms + lease)
  redis.call('HSET', K.readers, A.reader, c .. ':' .. string.format('%.0f', expiry))
  redis.call('ZADD', K.reader_expiries, string.format('%.0f', expiry), A.reader)
  for _, k in ipairs({K.readers, K.reader_expiries}) do
    if redis.call('PTTL', k) < expiry - now_ms then redis.call('PEXPIRE', k, expiry - now_ms) end
  end
  return expiry - now_ms
end
if redis.call('TYPE', K.lock)['ok'] ~= 'hash' then return 0 end
if redis.call('HEXISTS', K.lock, A.owner) == 0 then return 0 end
if A.hold_id ~= '' then
  if redis.call('TYPE', K.exec)['ok'] ~= 'string' then return 0 end
  if redis.call('GET', K.exec) ~= A.hold_id then return 0 end
  if redis.call('TYPE', K.policy)['ok'] == 'hash' then
    local cancelled = redis.call('HGET', K.policy, 'cancel')
    if cancelled and string.sub(cancelled, 1, #A.hold_id + 1) == A.hold_id .. ' ' then return -1 end
    -- A --supersede hold stays known as one (a --cancel-running waiter may cancel it).
    if redis.call('HGET', K.policy, 'hold') == A.hold_id then extend(K.policy, lease) end
  end
  redis.call('SET', K.exec, A.hold_id, 'PX', A.lease)
end
local in_force = extend(K.lock, lease)
extend(K.notes, in_force)
return in_force
