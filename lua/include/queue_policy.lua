-- A lock request's queue policies (lock_acquire.lua's ARGV queue_policy: "<priority>:<flags>",
-- flag "s" --supersede, "c" --cancel-running; "" for none) and what they keep in K.policy
-- and K.superseded (see lock_common.lua). Included after lock_common.lua.
-- @needs-arg queue_policy
local pol_priority, pol_flags = string.match(A.queue_policy or '', '^(%d+):(%a*)$')
local priority = tonumber(pol_priority) or 0
local supersede = pol_flags ~= nil and string.find(pol_flags, 's', 1, true) ~= nil
local cancel_running = supersede and string.find(pol_flags, 'c', 1, true) ~= nil
-- A waiter's score in K.waiters is its arrival (server us) less priority * PRIORITY_STEP:
-- higher priorities first, arrival order within one (exact: scores stay below 2^53, and
-- positive for priorities up to 99). A wait longer than a step (1e13 us, about 115 days)
-- would pass the next level up.
local PRIORITY_STEP = 10000000000000
-- A superseded wait's record lasts until that wait would have ended, at most this long (ms):
-- a waiter stopped longer than that and its message lost too queues again when resumed.
local SUPERSEDED_KEPT_MAX = 24 * 3600 * 1000
-- Records of superseded waits dropped per script run, as their time passes.
local SUPERSEDED_PURGE = 100

-- The owner of the newer --supersede request that superseded the wait `wait_id`, or nil.
-- Records past their time are dropped first (a bounded batch).
local function superseded_by(wait_id, now_ms)
  local gone = redis.call('ZRANGEBYSCORE', K.superseded, '-inf', '(' .. now_ms, 'LIMIT', 0, SUPERSEDED_PURGE)
  for _, id in ipairs(gone) do
    redis.call('HDEL', K.policy, 's:' .. id)
    redis.call('ZREM', K.superseded, id)
  end
  return redis.call('HGET', K.policy, 's:' .. wait_id)
end

-- Takes the queued waiter `m` out of the queue for good: its record says who superseded it
-- (its next attempt reads it, whenever that comes), and its grant channel wakes it now.
local function supersede_waiter(m, by, channel, now_ms)
  local _, _, wait_id = parse_member(m)
  local deadline = tonumber(redis.call('ZSCORE', K.timeouts, m) or '') or now_ms
  local kept = math.min(math.max(deadline - now_ms, 0), SUPERSEDED_KEPT_MAX) + QUEUE_MARGIN
  leave_queue(m)
  redis.call('HSET', K.policy, 's:' .. wait_id, by)
  redis.call('ZADD', K.superseded, string.format('%.0f', now_ms + kept), wait_id)
  extend(K.policy, kept)
  extend(K.superseded, kept)
  publish(channel .. ':' .. wait_id, 'superseded')
end

-- For the queued --supersede waiter `member` (score `score`; `kept_ms`: how long its entry lasts): the older queued --supersede
-- waiter leaves the queue, superseded by `owner`. Returns the newer request's owner when
-- that waiter is the newer one (this one came back after a lost connection: it is
-- superseded itself), else nil. At most one --supersede waiter is queued at a time.
local function supersede_older(member, owner, score, channel, now_ms, kept_ms)
  local at = tonumber(score) + priority * PRIORITY_STEP
  local newest = redis.call('HGET', K.policy, 'newest')
  local was_at, was = string.match(newest or '', '^(%d+) (.*)$')
  if was and was ~= member and redis.call('ZSCORE', K.waiters, was) then
    if tonumber(was_at) > at then
      local by = select(4, parse_member(was))
      supersede_waiter(member, by, channel, now_ms)
      return by
    end
    supersede_waiter(was, owner, channel, now_ms)
  end
  redis.call('HSET', K.policy, 'newest', string.format('%.0f', at) .. ' ' .. member)
  extend(K.policy, kept_ms)
end

-- Marks the running exec hold cancelled, when it was taken with --supersede: its next
-- renewal says so (lua/lock_renew.lua) and is not extended. It stays held until its holder
-- releases it, once its job is dead, or until its lease ends. True when it marked one.
local function cancel_running_hold(owner)
  local hold = redis.call('GET', K.exec)
  if not hold or redis.call('HGET', K.policy, 'hold') ~= hold then return false end
  redis.call('HSET', K.policy, 'cancel', hold .. ' ' .. owner)
  extend(K.policy, math.max(redis.call('PTTL', K.lock), 1))
  return true
end

-- Notes the fresh exec hold `hold_id` as taken with --supersede (a later --cancel-running
-- waiter may cancel it) for as long as its lease.
local function mark_supersede_hold(hold_id, lease_ms)
  redis.call('HSET', K.policy, 'hold', hold_id)
  extend(K.policy, lease_ms)
end
