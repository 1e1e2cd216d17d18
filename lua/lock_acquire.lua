-- One attempt to acquire, re-enter or claim a reentrant lock (KEYS: see lock_common.lua).
-- Waiters queue in arrival order; a free lock goes to the longest-waiting live waiter, as
-- a reservation that this script, run by that waiter, confirms (a grant message is only a
-- wake-up: anyone can PUBLISH). A fresh acquisition advances the fencing token.
-- ARGV[1] owner, ARGV[2] lease ms, ARGV[3] mode:
--   "try"    one attempt, never queued; re-enters a hold of the same owner
--   "wait"   first attempt of a wait: re-enters, or queues when busy
--   "queued" later attempts: claims a grant, takes a free lock at the head, keeps the place
--   "last"   the wait's final attempt: as "queued", but leaves the queue when busy
-- ARGV[4] ms the caller will still wait, ARGV[5] request (wait) id, ARGV[6] "lock" or
-- "exec" (an exec hold is exclusive even against its own owner), ARGV[7] lock channel,
-- ARGV[8] ms a granted waiter has to claim, ARGV[9] arrival (us) to keep, or "".
-- Reply: {1, count, fence, pttl_ms, fresh} held (fresh = 1: a new hold, new token);
--        {0, pttl_ms, arrival_us, same_owner_exec, owner1, count1, ...} busy;
--        {-1} this request was given up by its own clean-up: nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include lock_common.lua
local err = check_lock_keys()
if err then return err end
local owner, lease, mode, wait_ms = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local rid, kind, channel, claim_ms = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local member = ARGV[2] .. ':' .. kind .. ':' .. rid .. ':' .. owner
local req = redis.call('GET', KEYS[7])
if req == '0' then return {-1} end
local now = server_time()
drop_expired(now.ms)
local count = tonumber(redis.call('HGET', KEYS[1], owner) or '-1')
local exec_hold = redis.call('GET', KEYS[6])

-- Granted and now claimed, or taken by an earlier try of this same request (a retry).
local granted = redis.call('GET', KEYS[5]) == member
if granted or (req == '1' and count >= 1 and (kind ~= 'exec' or exec_hold == rid)) then
  if not granted then
    return {1, count, last_fence(), redis.call('PTTL', KEYS[1]), 0}
  end
  local fence = next_fence()
  redis.call('DEL', KEYS[5])
  redis.call('PEXPIRE', KEYS[1], lease)
  if kind == 'exec' then redis.call('SET', KEYS[6], rid, 'PX', lease) end
  remember('1')
  return {1, count, fence, redis.call('PTTL', KEYS[1]), 1}
end

-- Re-entry is for the first attempt of a request only: a queued waiter waits for its grant.
local same_owner_exec = count >= 1 and kind == 'exec' and exec_hold ~= false
if count >= 1 and (mode == 'try' or mode == 'wait') and not same_owner_exec then
  count = redis.call('HINCRBY', KEYS[1], owner, 1)
  extend(KEYS[1], lease)
  if kind == 'exec' then redis.call('SET', KEYS[6], rid, 'PX', lease) end
  remember('1')
  leave_queue(member)
  return {1, count, last_fence(), redis.call('PTTL', KEYS[1]), 0}
end

if redis.call('EXISTS', KEYS[1]) == 0 then
  local head = first_live(channel)
  if head == nil or head == member then
    local fence = next_fence()
    redis.call('HSET', KEYS[1], owner, 1)
    redis.call('PEXPIRE', KEYS[1], lease)
    if kind == 'exec' then redis.call('SET', KEYS[6], rid, 'PX', lease) end
    remember('1')
    leave_queue(member)
    return {1, 1, fence, lease, 1}
  end
  grant(head, channel, claim_ms)  -- strict FIFO: nobody takes it ahead of a live waiter
end

local arrival = 0
if mode == 'last' or mode == 'try' then
  leave_queue(member)
else
  arrival = redis.call('ZSCORE', KEYS[3], member)
  if not arrival then
    arrival = ARGV[9] ~= '' and ARGV[9] or string.format('%.0f', now.us)
    redis.call('ZADD', KEYS[3], arrival, member)
  end
  redis.call('ZADD', KEYS[4], now.ms + wait_ms, member)
  for i = 3, 4 do extend(KEYS[i], wait_ms + QUEUE_MARGIN) end
end
return holders_reply({0, redis.call('PTTL', KEYS[1]), tonumber(arrival), same_owner_exec and 1 or 0})
