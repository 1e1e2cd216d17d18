-- One attempt to acquire, re-enter or claim a reentrant read-write lock (KEYS: see
-- lock_common.lua). An exclusive hold (a writer) excludes everyone; shared holds (readers)
-- exclude writers only. Waiters queue in arrival order; a free lock goes to the
-- longest-waiting live waiter (or to the run of readers at the head), as a reservation that
-- this script, run by that waiter, confirms (a grant message is only a wake-up: anyone can
-- PUBLISH). A fresh exclusive acquisition advances the fencing token (a reservation took it
-- when it was granted).
-- ARGV[1] owner, ARGV[2] lease ms, ARGV[3] mode:
--   "try"    one attempt, never queued; re-enters a hold of the same owner
--   "wait"   first attempt of a wait: re-enters, or queues when busy
--   "queued" later attempts: claims a grant, takes a free lock at the head, keeps the place
--   "last"   the wait's final attempt: as "queued", but leaves the queue when busy
--   "claim"  as "queued" while this wait's queue entry is there or the fence is at least
--            ARGV[11]; otherwise (a server that lost the entry and the token of the hold
--            the waiter saw may have lost that hold, whose job still runs: see
--            prim/wait.cpp) it only claims a grant, takes nothing free and leaves the
--            queue
-- ARGV[4] ms the caller will still wait, ARGV[5] request (wait) id, ARGV[6] "lock" or
-- "exec" (exclusive) or "slock" or "sexec" (shared), ARGV[7] lock channel, ARGV[8] ms a
-- granted waiter has to claim, ARGV[9] arrival (us) to keep, or "", ARGV[10] the holds of
-- the rlock processes the caller runs under, "<hold id> <owner>" a line (RLOCK_HOLDS),
-- ARGV[11] the fence the wait's last busy reply gave ("0": none), ARGV[12] Redisson's lock
-- channel or "" (see foreign_channel in lock_common.lua), ARGV[13] the least token to hand
-- out, or "" (a quorum's: see fence_floor in lock_common.lua).
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
--        error "UPGRADE" (a reader asked for the exclusive lock: it would deadlock),
--        error "SELF <exclusive|shared|behind> <hold id>" (busy, and it could only be granted
--        once that hold of ARGV[10] is released: it would wait for itself; it leaves the queue),
--        "BADTYPE <type> <key>" / "MALFORMED <key>", and no change otherwise.
-- On a quorum (redis/quorum_rule.hpp):
-- @quorum grant
-- @include common.lua
-- @include waiter_queue.lua
-- @include lock_common.lua
foreign_channel = ARGV[12] or ''
fence_floor = tonumber(ARGV[13]) or 0
local owner, lease, mode, wait_ms = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local rid, kind, channel, claim_ms = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local shared = is_shared(kind)
local member = ARGV[2] .. ':' .. kind .. ':' .. rid .. ':' .. owner
local BUSY_LISTED = 100

local function held_reply(c, fence, pttl, fresh)
  remember('1')
  leave_queue(member)
  return {1, c, fence, pttl, fresh}
end

-- Writes a fresh exclusive hold of the free lock for this request and returns its token.
-- `last`: the stored token, when the caller read it already.
local function hold_free(last)
  local fence = next_fence(last)
  redis.call('HSET', KEYS[1], owner, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  if kind == 'exec' then redis.call('SET', KEYS[6], rid, 'PX', lease) end
  return fence
end

-- The common case on its shortest path: an exclusive request for a lock that nobody
-- holds, reads, waits for or was granted, and no semaphore of its name: none of its keys
-- but the token and this request's record exist (one EXISTS instead of about twenty-five
-- reads; each is a wake-up's worth of CPU on every member of a quorum). The full checks
-- below would find nothing else to look at, and the full path would take the lock just so
-- (no waiter to hand it to); a claim that may take nothing goes that way instead.
local LOCK_KEYS_BUT_TOKEN = {KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[8], KEYS[9],
  KEYS[10], KEYS[11]}
if not shared and not first_denied({{'EXISTS', unpack(LOCK_KEYS_BUT_TOKEN)}})
    and redis.call('EXISTS', unpack(LOCK_KEYS_BUT_TOKEN)) == 0 then
  local err = check_rights(channel)
  if err then return err end
  -- Read without a TYPE first: a GET of another type fails, writing nothing, and only then
  -- is the type looked up, to name it.
  local stored, outcome = redis.pcall('GET', KEYS[2]), redis.pcall('GET', KEYS[7])
  if type(stored) == 'table' then return bad_type(KEYS[2], 'string') or stored end
  if type(outcome) == 'table' then return bad_type(KEYS[7], 'string') or outcome end
  local last = tonumber(stored or '0')
  if not last then return redis.error_reply('MALFORMED ' .. KEYS[2]) end
  if outcome == '0' then return {-1} end
  if mode ~= 'claim' or last >= (tonumber(ARGV[11]) or 0) then
    local fence = hold_free(last)
    remember('1')  -- and no queue to leave: EXISTS found none
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
  local grant = redis.pcall('GET', KEYS[5])
  if grant == member then
    local err = first_denied({{'DEL', KEYS[5]}, {'PEXPIRE', KEYS[1], '1'}, {'SET', KEYS[6], 'm'},
      {'SET', KEYS[7], '1'}, {'ZREM', KEYS[3], 'm'}, {'ZREM', KEYS[4], 'm'}})
      or first_denied({{'TIME'}, {'TYPE', KEYS[1]}, {'GET', KEYS[7]}, {'HGET', KEYS[1], 'f'},
        {'PTTL', KEYS[1]}})
      or first_bad_type(LOCK_KEY_TYPES, 7) or malformed_fence()
    if err then return err end
    if redis.call('GET', KEYS[7]) == '0' then return {-1} end
    local count = redis.call('HGET', KEYS[1], owner)
    if count and not string.match(count, '^%d+$') then
      return redis.error_reply('MALFORMED ' .. KEYS[1])
    end
    if count and tonumber(count) >= 1 and (kind ~= 'exec' or redis.call('GET', KEYS[6]) == rid) then
      redis.call('DEL', KEYS[5])
      local in_force = extend(KEYS[1], lease)
      if kind == 'exec' then redis.call('SET', KEYS[6], rid, 'PX', lease) end
      return held_reply(tonumber(count), last_fence(), in_force, 1)
    end
  end
end

local rid_key = reader_id(kind, owner, rid)
local err = check_lock_keys(channel, rid_key)
if err then return err end
local first = mode == 'try' or mode == 'wait'
local req = redis.call('GET', KEYS[7])
if req == '0' then return {-1} end

local now = server_time()
queue.drop_expired(now.ms)
local readers, soonest = purge_readers(now.ms)
local count = tonumber(redis.call('HGET', KEYS[1], owner) or '-1')
local exec_hold = redis.call('GET', KEYS[6])
-- The caller's own shared hold (for "lock" and "exec": its owner's `lock --shared` hold).
local mine, mine_expiry = reader_live(rid_key, now.ms)

-- A shared hold for this request: the claim of a reservation (which already counts it), a
-- new hold or a re-entry (one more level). Its own lease starts now; never shortened.
local function take_shared(claim, fresh)
  local c, expiry = reader_live(rid_key, now.ms)
  c = (c or 0) + (claim and 0 or 1)
  reader_set(rid_key, c, math.max(expiry or 0, now.ms + lease), now.ms)
  redis.call('HDEL', KEYS[9], member)
  return held_reply(c, last_fence(), lease, fresh and 1 or 0)
end

-- True while a shared reservation for this very wait is in force: its record has not lapsed
-- and its reader entry lives. A lapsed one's record dies here, and the level it added to an
-- entry that another hold of the same reader keeps alive goes with it.
local function reserved()
  local lapses = tonumber(redis.call('HGET', KEYS[9], member) or '')
  if not lapses then return false end
  local c, expiry = reader_live(rid_key, now.ms)
  if lapses > now.ms and c then return true end
  redis.call('HDEL', KEYS[9], member)
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
    return {1, count, last_fence(), redis.call('PTTL', KEYS[1]), 0}
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
  count = redis.call('HINCRBY', KEYS[1], owner, 1)
  local in_force = extend(KEYS[1], lease)
  if kind == 'exec' then redis.call('SET', KEYS[6], rid, 'PX', lease) end
  return held_reply(count, last_fence(), in_force, 0)
end
if first and not shared and count < 0 and mine then
  return redis.error_reply('UPGRADE the owner holds the lock shared')
end

local free = redis.call('EXISTS', KEYS[1]) == 0 and (shared or readers == 0)
local may_take = mode ~= 'claim' or redis.call('ZSCORE', KEYS[3], member)
  or last_fence() >= (tonumber(ARGV[11]) or 0)
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
    local batch = redis.call('ZRANGE', KEYS[3], from, from + 99)
    if #batch == 0 then return false end
    for _, m in ipairs(batch) do
      if m == member then return false end
      local _, k, wait_id = parse_member(m)
      if k and not is_shared(k) and numsub(channel .. ':' .. wait_id) > 0 then return true end
    end
    from = from + 100
  end
end
for line in string.gmatch(ARGV[10] or '', '[^\n]+') do
  local id, who = string.match(line, '^(%x+) (.+)$')
  if id then
    local blocked
    local wc = tonumber(redis.call('HGET', KEYS[1], who) or '0') or 0
    if redis.call('GET', KEYS[6]) == id and wc >= 1 then
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
  local queued = redis.call('ZSCORE', KEYS[3], member)
  arrival = stay_queued(KEYS[3], KEYS[4], member, queued, ARGV[9], now, wait_ms)
end
local total = redis.call('HLEN', KEYS[1]) + readers
-- O(log N), for the waiting line on a terminal (its place in the queue).
local ahead = arrival ~= 0 and redis.call('ZCOUNT', KEYS[3], '-inf', '(' .. arrival) or 0
return holders_reply({0, holders_ttl(soonest), tonumber(arrival), same_owner_exec and 1 or 0, total,
                      last_fence(), ahead},
                     BUSY_LISTED)
