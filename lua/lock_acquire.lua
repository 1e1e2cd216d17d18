-- One attempt to acquire, re-enter or claim a reentrant read-write lock (KEYS: see
-- lock_common.lua). An exclusive hold (a writer) excludes everyone; shared holds (readers)
-- exclude writers only. Waiters queue in arrival order; a free lock goes to the
-- longest-waiting live waiter (or to the run of readers at the head), as a reservation that
-- this script, run by that waiter, confirms (a grant message is only a wake-up: anyone can
-- PUBLISH). A fresh exclusive acquisition advances the fencing token (a reservation took it
-- when it was granted).
-- @arg owner            the owner
-- @arg lease            lease ms
-- @arg mode             one of:
--   "try"    one attempt, never queued; re-enters a hold of the same owner
--   "wait"   first attempt of a wait: re-enters, or queues when busy
--   "queued" later attempts: claims a grant, takes a free lock at the head, keeps the place
--   "last"   the wait's final attempt: as "queued", but leaves the queue when busy
--   "claim"  as "queued" while this wait's queue entry is there or the fence is at least
--            seen_fence; otherwise (a server that lost the entry and the token of the hold
--            the waiter saw may have lost that hold, whose job still runs: see
--            prim/wait.cpp) it only claims a grant, takes nothing free and leaves the
--            queue
-- @arg wait_ms          ms the caller will still wait
-- @arg request_id       request (wait) id
-- @arg kind             "lock" or "exec" (exclusive) or "slock" or "sexec" (shared)
-- @arg channel          lock channel
-- @arg claim_ms         ms a granted waiter has to claim
-- @arg arrival          arrival (us) to keep, or ""
-- @arg ancestry         the holds of the rlock processes the caller runs under, "<hold id>
--                       <owner>" a line (RLOCK_HOLDS)
-- @arg seen_fence       the fence the wait's last busy reply gave ("0": none)
-- @arg foreign_channel  Redisson's lock channel or "" (see foreign_channel in lock_common.lua)
-- @arg note             what the hold (and the wait, while queued) says of itself, or ""
--                       (--note; the client checked it); a re-entry keeps the first
-- @arg queue_policy     "<priority>:<flags>" or "" (see lua/include/queue_policy.lua)
-- @arg [floor]          the least token to hand out, or "" (a quorum's: see fence_floor in
--                       lock_common.lua)
-- Same owner: a "lock" or "slock" request re-enters its owner's hold of the same mode (an
-- "slock" also the owner's exclusive hold: a downgrade); an exec hold (either mode) is its
-- process's own: no other exec of its owner runs beside an exclusive one, and an exclusive
-- request waits for an "sexec" reader as for anyone's.
-- Reply: {1, count, fence, pttl_ms, fresh} held (fresh = 1: a new hold);
--        {0, pttl_ms, arrival_us, same_owner_exec, holders_total, fence, ahead, owner1, count1,
--        ...} busy (fence: the last token handed out; ahead: the waiters queued before this
--        one, 0 when it is not queued)
--        (the writer and at most BUSY_LISTED readers);
--        {-1} this request was given up by its own clean-up: nothing changed;
--        {-3, owner} this wait was superseded by a newer --supersede request of owner: it
--        left the queue and takes nothing, now or later;
--        error "UPGRADE" (a reader asked for the exclusive lock: it would deadlock),
--        error "SELF <exclusive|shared|behind> <hold id>" (busy, and it could only be granted
--        once that hold of ancestry is released: it would wait for itself; it leaves the
--        queue), "BADTYPE <type> <key>" / "MALFORMED <key>", and no change otherwise.
-- On a quorum (prim/lock_quorum.cpp):
-- @quorum grant
-- @include common.lua
-- @include waiter_queue.lua
-- @include lock_common.lua
-- @include queue_policy.lua
local owner, lease, mode, wait_ms = A.owner, tonumber(A.lease), A.mode, tonumber(A.wait_ms)
local rid, kind, channel, claim_ms = A.request_id, A.kind, A.channel, A.claim_ms
local shared = is_shared(kind)
local member = A.lease .. ':' .. kind .. ':' .. rid .. ':' .. owner
local BUSY_LISTED = 100

local function held_reply(c, fence, pttl, fresh)
  if fresh == 1 and kind == 'exec' and supersede then mark_supersede_hold(rid, pttl) end
  remember('1')
  leave_queue(member)
  if fresh == 1 and not shared then announce_holder(channel) end
  return {1, c, fence, pttl, fresh}
end

-- Writes a fresh exclusive hold of the free lock for this request and returns its token.
-- `last`: the stored token, when the caller read it already.
local function hold_free(last)
  local fence = next_fence(last)
  redis.call('HSET', K.lock, owner, 1)
  redis.call('PEXPIRE', K.lock, lease)
  if kind == 'exec' then redis.call('SET', K.exec, rid, 'PX', lease) end
  note_hold(owner, A.note, lease)
  return fence
end

-- The common case on its shortest path: an exclusive request for a lock that nobody
-- holds, reads, waits for or was granted, and no semaphore of its name: none of its keys
-- but the token and this request's record exist (one EXISTS instead of about twenty-five
-- reads; each is a wake-up's worth of CPU on every member of a quorum). The full checks
-- below would find nothing else to look at, and the full path would take the lock just so
-- (no waiter to hand it to); a claim that may take nothing goes that way instead.
local LOCK_KEYS_BUT_TOKEN = {K.lock, K.waiters, K.timeouts, K.grant, K.exec, K.readers, K.reader_grants,
  K.sem, K.reader_expiries, K.notes, K.policy, K.superseded}
if not shared and not first_denied({{'EXISTS', unpack(LOCK_KEYS_BUT_TOKEN)}})
    and redis.call('EXISTS', unpack(LOCK_KEYS_BUT_TOKEN)) == 0 then
  local err = check_rights(channel)
  if err then return err end
  -- Read without a TYPE first: a GET of another type fails, writing nothing, and only then
  -- is the type looked up, to name it.
  local stored, outcome = redis.pcall('GET', K.fence), redis.pcall('GET', K.request)
  if type(stored) == 'table' then return bad_type(K.fence, 'string') or stored end
  if type(outcome) == 'table' then return bad_type(K.request, 'string') or outcome end
  local last = tonumber(stored or '0')
  if not last then return redis.error_reply('MALFORMED ' .. K.fence) end
  if outcome == '0' then return {-1} end
  if mode ~= 'claim' or last >= (tonumber(A.seen_fence) or 0) then
    local fence = hold_free(last)
    if kind == 'exec' and supersede then mark_supersede_hold(rid, lease) end
    remember('1')  -- and no queue to leave: EXISTS found none
    announce_holder(channel)
    return {1, 1, fence, lease, 1}
  end
end

-- The claim of an exclusive reservation for this very wait, the hand-off's second half, on
-- its shortest path: it checks the types, values and rights of what it reads and writes
-- (the release that granted checked the rest), about a third of the full checks' calls.
-- The grant key only names the wait: the reservation is in force while the lock hash holds
-- its owner (and an exec's, its hold id); a grant that outlived it gives nothing. Its token
-- was taken at the grant. An unreadable grant key is left to the full checks, which name it.
if not shared then
  local grant = redis.pcall('GET', K.grant)
  if grant == member then
    local err = first_denied({{'DEL', K.grant}, {'PEXPIRE', K.lock, '1'}, {'SET', K.exec, 'm'},
      {'SET', K.request, '1'}, {'ZREM', K.waiters, 'm'}, {'ZREM', K.timeouts, 'm'}})
      or first_denied({{'TIME'}, {'TYPE', K.lock}, {'GET', K.request}, {'HGET', K.lock, 'f'},
        {'PTTL', K.lock}})
      or first_bad_type(LOCK_KEY_TYPES, 7) or malformed_fence()
    if err then return err end
    if redis.call('GET', K.request) == '0' then return {-1} end
    local count = redis.call('HGET', K.lock, owner)
    if count and not string.match(count, '^%d+$') then
      return redis.error_reply('MALFORMED ' .. K.lock)
    end
    if count and tonumber(count) >= 1 and (kind ~= 'exec' or redis.call('GET', K.exec) == rid) then
      redis.call('DEL', K.grant)
      local in_force = extend(K.lock, lease)
      if kind == 'exec' then redis.call('SET', K.exec, rid, 'PX', lease) end
      extend(K.notes, in_force)
      return held_reply(tonumber(count), last_fence(), in_force, 1)
    end
  end
end

local rid_key = reader_id(kind, owner, rid)
local err = check_lock_keys(channel, rid_key)
if err then return err end
local first = mode == 'try' or mode == 'wait'
local req = redis.call('GET', K.request)
if req == '0' then return {-1} end

local now = server_time()
-- A superseded wait takes nothing, whenever its next attempt comes (it may have been stopped
-- and its message lost): checked before anything could be taken.
local superseded = superseded_by(rid, now.ms)
if superseded then
  leave_queue(member)
  return {-3, superseded}
end
queue.drop_expired(now.ms)
local readers, soonest = purge_readers(now.ms)
local count = tonumber(redis.call('HGET', K.lock, owner) or '-1')
local exec_hold = redis.call('GET', K.exec)
-- The caller's own shared hold (for "lock" and "exec": its owner's `lock --shared` hold).
local mine, mine_expiry = reader_live(rid_key, now.ms)

-- A shared hold for this request: the claim of a reservation (which already counts it), a
-- new hold or a re-entry (one more level). Its own lease starts now; never shortened.
local function take_shared(claim, fresh)
  local c, expiry = reader_live(rid_key, now.ms)
  c = (c or 0) + (claim and 0 or 1)
  reader_set(rid_key, c, math.max(expiry or 0, now.ms + lease), now.ms)
  redis.call('HDEL', K.reader_grants, member)
  return held_reply(c, last_fence(), lease, fresh and 1 or 0)
end

-- True while a shared reservation for this very wait is in force: its record has not lapsed
-- and its reader entry lives. A lapsed one's record dies here, and the level it added to an
-- entry that another hold of the same reader keeps alive goes with it.
local function reserved()
  local lapses = tonumber(redis.call('HGET', K.reader_grants, member) or '')
  if not lapses then return false end
  local c, expiry = reader_live(rid_key, now.ms)
  if lapses > now.ms and c then return true end
  redis.call('HDEL', K.reader_grants, member)
  if c and c > 1 then reader_set(rid_key, c - 1, expiry, now.ms) end
  return false
end

-- Claimed (a shared reservation for this very wait), or taken by an earlier try of this same
-- request whose reply was lost (a retry).
if shared then
  if reserved() then return take_shared(true, true) end
  if req == '1' and mine then
    remember('1')  -- a write, so that a WAIT behind this repeat covers the first run too
    -- The lease left, as the exclusive repeat's PTTL: a quorum counts it from this repeat.
    return {1, mine, last_fence(), mine_expiry - now.ms, 0}
  end
else
  if req == '1' and count >= 1 and (kind ~= 'exec' or exec_hold == rid) then
    remember('1')  -- a write, so that a WAIT behind this repeat covers the first run too
    return {1, count, last_fence(), redis.call('PTTL', K.lock), 0}
  end
end

-- Re-entry is for the first attempt of a request only: a queued waiter waits for its grant.
-- A reader re-enters its own shared hold; a writer taking the shared lock downgrades, unless
-- an exec runs inside the write hold and this is another exec.
local same_owner_exec = count >= 1 and exec_hold ~= false and (kind == 'exec' or kind == 'sexec')
-- Beside the owner's exclusive `lock` hold the only readers are the owner's own: its
-- `lock --shared` hold (mine) and its `exec --shared` jobs. An exclusive exec waits for
-- those jobs as for anyone's reader: it never re-enters the lock hold while one runs.
if kind == 'exec' and count >= 1 and readers > (mine and 1 or 0) then same_owner_exec = true end
if first and shared and (mine or (count >= 1 and not same_owner_exec)) then
  return take_shared(false, false)
end
if first and not shared and count >= 1 and not same_owner_exec then
  count = redis.call('HINCRBY', K.lock, owner, 1)
  local in_force = extend(K.lock, lease)
  if kind == 'exec' then redis.call('SET', K.exec, rid, 'PX', lease) end
  -- The first hold's record stays; a hold taken by an rlock that kept none gets one now.
  if redis.call('HGET', K.notes, 'owner') == owner then
    extend(K.notes, in_force)
  else
    note_hold(owner, A.note, in_force)
  end
  return held_reply(count, last_fence(), in_force, 0)
end
if first and not shared and count < 0 and mine then
  return redis.error_reply('UPGRADE the owner holds the lock shared')
end

local free = redis.call('EXISTS', K.lock) == 0 and (shared or readers == 0)
local may_take = mode ~= 'claim' or redis.call('ZSCORE', K.waiters, member)
  or last_fence() >= (tonumber(A.seen_fence) or 0)
if free and may_take then
  local head = first_live(channel)
  if head == nil or head == member then
    if shared then
      local held = take_shared(false, true)
      pass_on(channel, claim_ms)  -- the readers queued right behind come in too
      return held
    end
    return held_reply(1, hold_free(), lease, 1)
  end
  -- Strict FIFO: nobody takes it ahead of a live waiter; it goes to the head instead.
  pass_on(channel, claim_ms)
  if shared and reserved() then return take_shared(true, true) end
  readers, soonest = purge_readers(now.ms)
end

-- Busy. A request that could only be granted once a live hold of the processes it runs under
-- is released would wait for itself: refused at once. Those holds are named by the caller
-- but checked here, on the server: a hold id copied into an unrelated process can only make
-- that process's own request fail, never grant it anything.
local function exclusive_ahead()
  local from = 0
  while true do
    local batch = redis.call('ZRANGE', K.waiters, from, from + 99)
    if #batch == 0 then return false end
    for _, m in ipairs(batch) do
      if m == member then return false end
      local _, k, wait_id = parse_member(m)
      if k and not is_shared(k) and numsub(channel .. ':' .. wait_id) > 0 then return true end
    end
    from = from + 100
  end
end
for line in string.gmatch(A.ancestry or '', '[^\n]+') do
  local id, who = string.match(line, '^(%x+) (.+)$')
  if id then
    local blocked
    local wc = tonumber(redis.call('HGET', K.lock, who) or '0') or 0
    if redis.call('GET', K.exec) == id and wc >= 1 then
      blocked = 'exclusive'
    elseif reader_live(who .. '\31' .. id, now.ms) then
      if not shared then
        blocked = 'shared'
      elseif exclusive_ahead() then
        blocked = 'behind'
      end
    end
    if blocked then
      leave_queue(member)
      return redis.error_reply('SELF ' .. blocked .. ' ' .. id)
    end
  end
end

-- A "claim" that may take nothing (the server lost this wait's entry and the token it saw)
-- does not queue again either: a queued waiter is what the next release or newcomer grants
-- the lock to (pass_on), which would hand it the hold the server forgot. The wait queues
-- again, at its first arrival, once its claim window is over.
local arrival = 0
if mode == 'last' or mode == 'try' or not may_take then
  leave_queue(member)
else
  local queued = redis.call('ZSCORE', K.waiters, member)
  arrival = stay_queued(K.waiters, K.timeouts, member, queued, A.arrival, now, wait_ms,
                        priority * PRIORITY_STEP)
  if supersede then
    local by = supersede_older(member, owner, arrival, channel, now.ms, wait_ms + QUEUE_MARGIN)
    if by then return {-3, by} end
  end
  if cancel_running and cancel_running_hold(owner) then tell_holders(channel) end
  if A.note ~= '' then
    redis.call('HSET', K.notes, 'w:' .. member, A.note)
    extend(K.notes, wait_ms + QUEUE_MARGIN)
  end
end
local total = redis.call('HLEN', K.lock) + readers
-- O(log N), for the waiting line on a terminal (its place in the queue).
local ahead = arrival ~= 0 and redis.call('ZCOUNT', K.waiters, '-inf', '(' .. arrival) or 0
return holders_reply({0, holders_ttl(soonest), tonumber(arrival), same_owner_exec and 1 or 0, total,
                      last_fence(), ahead},
                     BUSY_LISTED)
