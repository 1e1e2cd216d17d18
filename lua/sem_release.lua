-- Gives permits back and passes the freed ones to the head waiters (KEYS: see
-- sem_common.lua), or cleans up after a request that gave up.
-- ARGV[1] semaphore channel, ARGV[2] claim ms, ARGV[3] mode, ARGV[4] keep ms (for "hold"),
-- ARGV[5] ms the reply record KEYS[10] is kept, then per mode:
--   "release" ARGV[6..] permit ids: each one still held is freed (a permit released twice,
--             expired or never issued is not credited again);
--   "hold"    as "release", for the permits of request KEYS[7]; the request is marked
--             released, so that a retry after a lost reply still reports them released;
--             keep > 0 leaves them in use that many ms more (--min-hold);
--   "abandon" ARGV[6] the request's waiters member: gives back what the request took or
--             was granted, leaves the queue, marks the request given up.
--   "force"   frees every permit.
-- Reply: {released, id1, owner1, id2, owner2, ...}: how many permits were freed and, for
--        "release"/"hold", the ids that were not held (for "force": the permits freed with
--        their holders); for "hold" released = -1 when the request was released before;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- KEYS[10] this request's reply record (see once in common.lua): a repeat of the same
-- request (a retry after a lost reply) gets the first run's reply and changes nothing.
-- @include common.lua
-- @include waiter_queue.lua
-- @include sem_common.lua
return once(KEYS[10], ARGV[5], function()
local err = check_sem_keys(ARGV[1])
if err then return err end
local channel, claim_ms, mode = ARGV[1], ARGV[2], ARGV[3]
local keep = mode == 'hold' and tonumber(ARGV[4]) or 0
local now = server_time()
reclaim(now.ms)

local function free(ids, reply)
  local n = 0
  for _, id in ipairs(ids) do
    if keep > 0 and redis.call('ZSCORE', KEYS[1], id) then
      redis.call('ZADD', KEYS[1], 'XX', now.ms + keep, id)
      extend(KEYS[1], keep)
      extend(KEYS[3], keep)
      n = n + 1
    elseif redis.call('ZREM', KEYS[1], id) == 1 then
      n = n + 1
    else
      reply[#reply + 1] = id
    end
    if keep == 0 then redis.call('HDEL', KEYS[3], id) end
  end
  return n
end

local reply = {0}
local ids = {}
if mode == 'force' then
  local all = redis.call('ZRANGE', KEYS[1], 0, -1)
  for _, id in ipairs(all) do
    reply[#reply + 1] = id
    reply[#reply + 1] = redis.call('HGET', KEYS[3], id) or ''
  end
  redis.call('DEL', KEYS[1], KEYS[3])
  reply[1] = #all
elseif mode == 'abandon' then
  local member = ARGV[6]
  local req = redis.call('GET', KEYS[7])
  if req ~= '0' then ids = recorded_ids(req) end
  redis.call('ZREM', KEYS[6], member)
  leave_queue(member)
  redis.call('SET', KEYS[7], '0', 'PX', REQUEST_TTL)
  reply[1] = free(ids, {})
else
  for i = 6, #ARGV do ids[#ids + 1] = ARGV[i] end
  if mode == 'hold' and redis.call('GET', KEYS[7]) == '0' then return {-1} end
  reply[1] = free(ids, reply)
  if mode == 'hold' then redis.call('SET', KEYS[7], '0', 'PX', REQUEST_TTL) end
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
