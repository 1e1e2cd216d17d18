-- Gives permits back and passes the freed ones to the head waiters (KEYS: see
-- sem_common.lua), or cleans up after a request that gave up.
-- @arg channel    semaphore channel
-- @arg claim_ms   claim ms
-- @arg mode       one of the modes below
-- @arg keep_ms    keep ms (for "hold")
-- @arg reply_ttl  ms the reply record is kept
-- @arg values...  per mode:
--   "release" permit ids: each one still held is freed (a permit released twice, expired
--             or never issued is not credited again);
--   "hold"    as "release", for the permits of the request; the request is marked
--             released, so that a retry after a lost reply still reports them released;
--             keep > 0 leaves them in use that many ms more (--min-hold);
--   "abandon" the request's waiters member: gives back what the request took or was
--             granted, leaves the queue, marks the request given up.
--   "force"   frees every permit.
-- Reply: {released, id1, owner1, id2, owner2, ...}: how many permits were freed and, for
--        "release"/"hold", the ids that were not held (for "force": the permits freed with
--        their holders); for "hold" released = -1 when the request was released before;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include common.lua
-- @include waiter_queue.lua
-- @include sem_common.lua
-- @key [reply]  this request's reply record (see once in common.lua): a repeat of the same
--               request (a retry after a lost reply) gets the first run's reply and changes
--               nothing; "abandon" goes without one
return once(K.reply, A.reply_ttl, function()
local err = check_sem_keys(A.channel)
if err then return err end
local channel, claim_ms, mode = A.channel, A.claim_ms, A.mode
local keep = mode == 'hold' and tonumber(A.keep_ms) or 0
local now = server_time()
reclaim(now.ms)

local function free(ids, reply)
  local n = 0
  for _, id in ipairs(ids) do
    if keep > 0 and redis.call('ZSCORE', K.permits, id) then
      redis.call('ZADD', K.permits, 'XX', now.ms + keep, id)
      extend(K.permits, keep)
      extend(K.holders, keep)
      extend(K.notes, keep)
      n = n + 1
    elseif redis.call('ZREM', K.permits, id) == 1 then
      n = n + 1
    else
      reply[#reply + 1] = id
    end
    if keep == 0 then
      redis.call('HDEL', K.holders, id)
      redis.call('HDEL', K.notes, 'p:' .. id)
    end
  end
  return n
end

local reply = {0}
local ids = {}
if mode == 'force' then
  local all = redis.call('ZRANGE', K.permits, 0, -1)
  for _, id in ipairs(all) do
    reply[#reply + 1] = id
    reply[#reply + 1] = redis.call('HGET', K.holders, id) or ''
    redis.call('HDEL', K.notes, 'p:' .. id)
  end
  redis.call('DEL', K.permits, K.holders)
  reply[1] = #all
elseif mode == 'abandon' then
  local member = A.values[1]
  local req = redis.call('GET', K.request)
  if req ~= '0' then ids = recorded_ids(req) end
  redis.call('ZREM', K.grants, member)
  leave_queue(member)
  redis.call('SET', K.request, '0', 'PX', REQUEST_TTL)
  reply[1] = free(ids, {})
else
  for _, id in ipairs(A.values) do ids[#ids + 1] = id end
  if mode == 'hold' and redis.call('GET', K.request) == '0' then return {-1} end
  reply[1] = free(ids, reply)
  if mode == 'hold' then redis.call('SET', K.request, '0', 'PX', REQUEST_TTL) end
end
if keep > 0 and reply[1] > 0 then
  -- Nothing is handed over when the keep runs out: the head looks again then, and the
  -- waiter behind it too, in case the head is stopped.
  tell_changed(first_live(channel), channel, keep)
  tell_changed(second_live(channel), channel, keep)
elseif not pass_on(channel, claim_ms, now.ms, nil) and reply[1] > 0 then
  publish(channel, 'released')
end
return reply
end, function(r) return r[1] > 0 end)
