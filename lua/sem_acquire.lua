-- One attempt to take `count` permits of a semaphore, or to claim a grant (KEYS: see
-- sem_common.lua). Waiters queue in arrival order; freed permits are reserved for the
-- head waiters whose whole request fits, and each confirms with this script (a grant
-- message is only a wake-up). A request never takes permits ahead of a live waiter.
-- ARGV[1] owner, ARGV[2] lease ms, ARGV[3] mode ("try", "wait", "queued", "last", "claim":
-- see lock_acquire.lua), ARGV[4] ms the caller will still wait, ARGV[5] request (wait) id,
-- ARGV[6] count, ARGV[7] capacity the caller expects, ARGV[8] '1' = set the capacity to
-- ARGV[7] (--resize), ARGV[9] semaphore channel, ARGV[10] claim ms, ARGV[11] arrival (us)
-- to keep, or "", ARGV[12] the holds of the rlock processes the caller runs under,
-- "<hold id> <owner>" a line (RLOCK_HOLDS).
-- Reply: {1, lease_ms, id1, id2, ...} taken (also for a retry of a request that took them);
--        {0, next_expiry_ms, arrival_us, in_use, capacity, ahead} busy (in_use: permits
--        taken or granted and not claimed yet; ahead: the requests queued before this one, 0
--        when it is not queued);
--        {-1} this request was given up by its own clean-up: nothing changed;
--        error "CAPACITY <stored> <given>" when the stored capacity differs, ARGV[8] is
--        not '1' and the request is new (not queued, granted or taken); "CAPACITY <stored>
--        <given> <count>" when a queued request asks for more than a resize left;
--        "BADTYPE <type> <key>" / "MALFORMED <key>"; no change on an error;
--        error "SELF <held> <capacity> <hold id>" (busy, and it could only be granted once
--        the <held> permits of that hold of ARGV[12] are released: it would wait for itself;
--        it leaves the queue).
-- @include common.lua
-- @include waiter_queue.lua
-- @include sem_common.lua
local err = check_sem_keys(ARGV[9])
if err then return err end
local owner, lease, mode, wait_ms = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local rid, count, want_cap = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local channel, claim_ms = ARGV[9], ARGV[10]
local member = count .. ':' .. rid .. ':' .. owner

-- A resize is an administrative act: a request already queued or granted (it was let in
-- under the capacity of its time) keeps its place and its grant; only a new request must
-- name the stored capacity. One that asks for more than the new capacity is told so.
local stored = redis.call('HGET', KEYS[2], 'capacity')
local req = redis.call('GET', KEYS[7])
if req == '0' then return {-1} end
local granted = redis.call('ZSCORE', KEYS[6], member)
-- A request that brings its arrival back (ARGV[11]) was queued before: its grant lapsed
-- or its connection dropped, and it keeps its place.
local admitted = req or granted or ARGV[11] ~= '' or redis.call('ZSCORE', KEYS[4], member)
if stored and tonumber(stored) ~= want_cap and ARGV[8] ~= '1' and not admitted then
  return redis.error_reply('CAPACITY ' .. stored .. ' ' .. ARGV[7])
end
if stored and ARGV[8] ~= '1' and count > tonumber(stored) and not req and not granted then
  return redis.error_reply('CAPACITY ' .. stored .. ' ' .. ARGV[7] .. ' ' .. count)
end
local now = server_time()
if req then  -- a retry of a request that took its permits (its reply was lost)
  -- Recorded anew: a write, so that a WAIT behind this repeat covers the first run too.
  redis.call('SET', KEYS[7], req, 'PX', REQUEST_TTL)
  local ids = recorded_ids(req)
  local score = redis.call('ZSCORE', KEYS[1], ids[1] or '')
  local reply = {1, score and math.max(tonumber(score) - now.ms, 0) or 0}
  for _, id in ipairs(ids) do reply[#reply + 1] = id end
  return reply
end
if not stored or (ARGV[8] == '1' and stored ~= ARGV[7]) then
  redis.call('HSET', KEYS[2], 'capacity', ARGV[7])
end
reclaim(now.ms)

local function taken(ids)
  leave_queue(member)
  redis.call('ZREM', KEYS[6], member)
  local reply = {1, lease}
  for _, id in ipairs(ids) do reply[#reply + 1] = id end
  return reply
end

-- Granted earlier (and still reserved): claim it.
if redis.call('ZSCORE', KEYS[6], member) then
  redis.call('ZREM', KEYS[6], member)
  return taken(take(rid, count, owner, lease, now.ms))
end

local queued = redis.call('ZSCORE', KEYS[4], member)
local claim_only = mode == 'claim' and not queued
if not claim_only and not queued and first_live(channel) == nil and count <= free_permits() then
  return taken(take(rid, count, owner, lease, now.ms))
end

local arrival = 0
if mode ~= 'try' then
  arrival = stay_queued(KEYS[4], KEYS[5], member, queued, ARGV[11], now, wait_ms)
end
if not claim_only then
  pass_on(channel, claim_ms, now.ms, member)
  if redis.call('ZSCORE', KEYS[6], member) then
    redis.call('ZREM', KEYS[6], member)
    return taken(take(rid, count, owner, lease, now.ms))
  end
  -- A try is in no queue: what the waiters were just given (permits freed by a grow, a
  -- lease or a claim window that ran out) left the rest to it, unless a waiter still waits.
  if mode == 'try' and first_live(channel) == nil and count <= free_permits() then
    return taken(take(rid, count, owner, lease, now.ms))
  end
end
-- Busy. A request that could only be granted once permits of the processes it runs under
-- are released would wait for itself: refused at once. Those holds are named by the caller
-- but checked here: a copied hold id can only make the caller's own request fail. It waits
-- for them when it, or a live waiter ahead of it, asks for more than the rest of the capacity.
local function waits_for_permits(usable)
  if count > usable then return true end
  local from = 0
  while true do
    local batch = redis.call('ZRANGE', KEYS[4], from, from + 99)
    if #batch == 0 then return false end
    for _, m in ipairs(batch) do
      if m == member then return false end
      local n, wait_id = member_count(m), wait_id_of(m)
      if n > usable and n <= capacity() and wait_id and numsub(channel .. ':' .. wait_id) > 0 then
        return true
      end
    end
    from = from + 100
  end
end
local held, nearest = 0, nil
for line in string.gmatch(ARGV[12] or '', '[^\n]+') do
  local id, i = string.match(line, '^(%x+) '), 0
  while id and redis.call('ZSCORE', KEYS[1], id .. '.' .. (i + 1)) do i = i + 1 end
  if i > 0 then held, nearest = held + i, id end
end
if held > 0 and waits_for_permits(capacity() - held) then
  leave_queue(member)
  return redis.error_reply('SELF ' .. held .. ' ' .. capacity() .. ' ' .. nearest)
end

local ahead = 0
if mode == 'last' or mode == 'try' then
  leave_queue(member)
elseif arrival ~= 0 then
  ahead = redis.call('ZCOUNT', KEYS[4], '-inf', '(' .. arrival)  -- for the waiting line
end
-- Permits granted and not claimed yet are in use: only the rest is free.
local in_use = redis.call('ZCARD', KEYS[1]) + reserved()
return {0, next_expiry(now.ms), tonumber(arrival), in_use, capacity(), ahead}
