-- The queue of waiters that locks and semaphores share: `waiters`, a zset of members by
-- arrival, and `timeouts`, the same members by the server time their wait gives up. Each
-- member names its wait id (`wait_id_of`), whose grant channel is `<channel>:<wait id>`:
-- a waiter is live while that channel has a subscriber. Included after common.lua.
-- `notes` (a lock's notes hash, or nil): a wait's note, "w:" .. member, leaves with it.
local function waiter_queue(waiters, timeouts, wait_id_of, notes)
  local q = {}

  function q.leave(member)
    redis.call('ZREM', waiters, member)
    redis.call('ZREM', timeouts, member)
    if notes then redis.call('HDEL', notes, 'w:' .. member) end
  end

  -- Drops the waits whose deadline has passed.
  function q.drop_expired(now_ms)
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', timeouts, '-inf', '(' .. now_ms)) do
      q.leave(m)
    end
  end

  function q.live(member, channel)
    local wait_id = wait_id_of(member)
    return wait_id ~= nil and numsub(channel .. ':' .. wait_id) > 0
  end

  -- The longest-waiting live waiter; the dead ones are dropped on the way.
  function q.first_live(channel)
    while true do
      local head = redis.call('ZRANGE', waiters, 0, 0)[1]
      if not head then return nil end
      if q.live(head, channel) then return head end
      q.leave(head)
    end
  end

  -- The live waiter right behind the head (the head's stand-in if it never takes what it
  -- was granted: a stopped process keeps its subscription), among the few that follow it;
  -- nil if none.
  function q.second_live(channel)
    for _, m in ipairs(redis.call('ZRANGE', waiters, 1, 8)) do
      if q.live(m, channel) then return m end
    end
  end

  -- Tells the waiter `member` (not `self`, the caller, which learns it from its reply), on
  -- its own grant channel, that what it waits for frees within `ms` (prim/wait.cpp
  -- shortens its sleep to that): only the waiters that would take it then need to look
  -- again, never the whole queue, so that a hand-off costs the same whatever the queue's
  -- length. The others look again at the expiry they last saw, or when a hand-off makes
  -- them the next.
  function q.tell_changed(member, channel, ms, self)
    local wait_id = member and member ~= self and wait_id_of(member)
    if wait_id then publish(channel .. ':' .. wait_id, 'changed ' .. ms) end
  end

  return q
end
