-- One attempt to take `count` permits of a semaphore, or to claim a grant (KEYS: see
-- sem_common.lua). Waiters queue in arrival order; freed permits are reserved for the
-- head waiters whose whole request fits, and each confirms with this script (a grant
-- message is only a wake-up). A request never takes permits ahead of a live waiter.
-- @arg owner       the owner
-- @arg lease       lease ms
-- @arg mode        "try", "wait", "queued", "last", "claim": see lock_acquire.lua
-- @arg wait_ms     ms the caller will still wait
-- @arg request_id  request (wait) id
-- @arg count       permits asked for
-- @arg capacity    capacity the caller expects
-- @arg resize      '1' = set the capacity to capacity (--resize)
-- @arg channel     semaphore channel
-- @arg claim_ms    claim ms
-- @arg arrival     arrival (us) to keep, or ""
-- @arg ancestry    the holds of the rlock processes the caller runs under, "<hold id>
--                  <owner>" a line (RLOCK_HOLDS)
-- @arg note        what the permits (and the wait, while queued) say of themselves, or ""
-- Reply: {1, lease_ms, id1, id2, ...} taken (also for a retry of a request that took them);
--        {0, next_expiry_ms, arrival_us, in_use, capacity, ahead} busy (in_use: permits
--        taken or granted and not claimed yet; ahead: the requests queued before this one, 0
--        when it is not queued);
--        {-1} this request was given up by its own clean-up: nothing changed;
--        error "CAPACITY <stored> <given>" when the stored capacity differs, resize is
--        not '1' and the request is new (not queued, granted or taken); "CAPACITY <stored>
--        <given> <count>" when a queued request asks for more than a resize left;
--        "BADTYPE <type> <key>" / "MALFORMED <key>"; no change on an error;
--        error "SELF <held> <capacity> <hold id>" (busy, and it could only be granted once
--        the <held> permits of that hold of ancestry are released: it would wait for itself;
--        it leaves the queue).
-- @include common.lua
-- @include waiter_queue.lua
-- @include sem_common.lua
local err = check_sem_keys(A.channel)
if err then return err end
local owner, lease, mode, wait_ms = A.owner, tonumber(A.lease), A.mode, tonumber(A.wait_ms)
local rid, count, want_cap = A.request_id, tonumber(A.count), tonumber(A.capacity)
local channel, claim_ms = A.channel, A.claim_ms
local member = count .. ':' .. rid .. ':' .. owner

-- A resize is an administrative act: a request already queued or granted (it was let in
-- under the capacity of its time) keeps its place and its grant; only a new request must
-- name the stored capacity. One that asks for more than the new capacity is told so.
local stored = redis.call('HGET', K.config, 'capacity')
local req = redis.call('GET', K.request)
if req == '0' then return {-1} end
local granted = redis.call('ZSCORE', K.grants, member)
-- A request that brings its arrival back (arrival) was queued before: its grant lapsed
-- or its connection dropped, and it keeps its place.
local admitted = req or granted or A.arrival ~= '' or redis.call('ZSCORE', K.waiters, member)
if stored and tonumber(stored) ~= want_cap and A.resize ~= '1' and not admitted then
  return redis.error_reply('CAPACITY ' .. stored .. ' ' .. A.capacity)
end
if stored and A.resize ~= '1' and count > tonumber(stored) and not req and not granted then
  return redis.error_reply('CAPACITY ' .. stored .. ' ' .. A.capacity .. ' ' .. count)
end
local now = server_time()
if req then  -- a retry of a request that took its permits (its reply was lost)
  -- Recorded anew: a write, so that a WAIT behind this repeat covers the first run too.
  redis.call('SET', K.request, req, 'PX', REQUEST_TTL)
  local ids = recorded_ids(req)
  local score = redis.call('ZSCORE', K.permits, ids[1] or '')
  local reply = {1, score and math.max(tonumber(score) - now.ms, 0) or 0}
  for _, id in ipairs(ids) do reply[#reply + 1] = id end
  return reply
end
if not stored or (A.resize == '1' and stored ~= A.capacity) then
  redis.call('HSET', K.config, 'capacity', A.capacity)
end
reclaim(now.ms)

local function taken(ids)
  leave_queue(member)
  redis.call('ZREM', K.grants, member)
  local reply = {1, lease}
  for _, id in ipairs(ids) do reply[#reply + 1] = id end
  return reply
end

-- Granted earlier (and still reserved): claim it.
if redis.call('ZSCORE', K.grants, member) then
  redis.call('ZREM', K.grants, member)
  return taken(take(rid, count, owner, lease, now.ms, A.note))
end

local queued = redis.call('ZSCORE', K.waiters, member)
local claim_only = mode == 'claim' and not queued
if not claim_only and not queued and first_live(channel) == nil and count <= free_permits() then
  return taken(take(rid, count, owner, lease, now.ms, A.note))
end

local arrival = 0
if mode ~= 'try' then
  arrival = stay_queued(K.waiters, K.timeouts, member, queued, A.arrival, now, wait_ms)
  if A.note ~= '' then
    redis.call('HSET', K.notes, 'w:' .. member, A.note)
    extend(K.notes, wait_ms + QUEUE_MARGIN)
  end
end
if not claim_only then
  pass_on(channel, claim_ms, now.ms, member)
  if redis.call('ZSCORE', K.grants, member) then
    redis.call('ZREM', K.grants, member)
    return taken(take(rid, count, owner, lease, now.ms, A.note))
  end
  -- A try is in no queue: what the waiters were just given (permits freed by a grow, a
  -- lease or a claim window that ran out) left the rest to it, unless a waiter still waits.
  if mode == 'try' and first_live(channel) == nil and count <= free_permits() then
    return taken(take(rid, count, owner, lease, now.ms, A.note))
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
    local batch = redis.call('ZRANGE', K.waiters, from, from + 99)
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
for line in string.gmatch(A.ancestry or '', '[^\n]+') do
  local id, i = string.match(line, '^(%x+) '), 0
  while id and redis.call('ZSCORE', K.permits, id .. '.' .. (i + 1)) do i = i + 1 end
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
  ahead = redis.call('ZCOUNT', K.waiters, '-inf', '(' .. arrival)  -- for the waiting line
end
-- Permits granted and not claimed yet are in use: only the rest is free.
local in_use = redis.call('ZCARD', K.permits) + reserved()
return {0, next_expiry(now.ms), tonumber(arrival), in_use, capacity(), ahead}
