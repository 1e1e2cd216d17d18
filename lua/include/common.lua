-- Shared by every primitive's scripts (spliced in at build time where a script says
-- @include, before the primitive's own helpers).

-- A waiting request's record (given up, or what it took) is remembered this long (ms): long
-- enough for a retry or a clean-up that was queued behind the request in a stalled server.
-- Reply records (once, below) live as long as the client says instead.
local REQUEST_TTL = 60000
-- Waiters' keys outlive the longest wait in them by this much (ms).
local QUEUE_MARGIN = 1000

-- An error reply when `key` holds another type than `want`; nil when it fits or is absent.
local function bad_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('BADTYPE ' .. t .. ' ' .. key)
  end
end

-- An error reply for the first of the first n (default all) {key, type} pairs of `typed`
-- whose key holds another type.
local function first_bad_type(typed, n)
  for i = 1, n or #typed do
    local err = bad_type(typed[i][1], typed[i][2])
    if err then return err end
  end
end

-- Rights are checked before the first write, so that a refusal changes nothing: need(...)
-- asks the caller's ACL for one command (its argument list as the script would send it)
-- and keeps the first refusal for refusal() to return. One call a right, not lists of
-- argument lists: a lock's check asks for 48, on every member of a quorum, and building
-- their tables took a fifth of the acquisition's CPU. A server without ACL checks (before
-- Redis 7) refuses nothing.
local acl_check = redis.acl_check_cmd
local refused

-- The refusal of a command as rlock reports it: the command (a subcommand's right,
-- "PUBSUB SHARDNUMSUB", with its subcommand) and the key or channel it was refused on.
local function denial(name, a, b)
  local on = a
  if name == 'PUBSUB' then name, on = name .. ' ' .. a, b end
  return redis.error_reply('NOPERM rlock needs ' .. name .. (on and ' on ' .. on or '') .. ' (nothing was changed)')
end

local function need(...)
  if acl_check and not refused and not acl_check(...) then refused = denial(...) end
end

-- The first refusal since the last call, as an error reply (nil: none).
local function refusal()
  local r = refused
  refused = nil
  return r
end

-- The first of `needs` (argument lists of every command a script may run: its writes,
-- TIME, PUBSUB NUMSUB, its reads) that the caller's ACL refuses, as an error reply; nil
-- when all are allowed. A read or a TIME refused after a write would end the script
-- half-done (an unlock that released but did not pass the lock on).
local function first_denied(needs)
  for _, argv in ipairs(needs) do need(unpack(argv)) end
  return refusal()
end

-- Pub/sub is sharded (SPUBLISH, PUBSUB SHARDNUMSUB) wherever the server has it (Redis 7):
-- the only kind a cluster delivers to the node that owns the slot, and the same code path
-- on a standalone server. A server without it (Redis 6, "unknown command" or "Unknown
-- subcommand") gets classic PUBLISH and NUMSUB, and its waiters fall back to SUBSCRIBE
-- (redis::Subscriber::open). nil until the first call finds out.
local sharded_pubsub

local function classic_only(reply)
  if type(reply) == 'table' and reply.err then
    if not string.find(reply.err, 'nknown') then error(reply) end
    sharded_pubsub = false
    return true
  end
  sharded_pubsub = true
  return false
end

-- Publishes `message` on `channel` to rlock's waiters.
local function publish(channel, message)
  if sharded_pubsub ~= false then
    local r = redis.pcall('SPUBLISH', channel, message)
    if not classic_only(r) then return r end
  end
  return redis.call('PUBLISH', channel, message)
end

-- How many waiters listen on `channel` (on this node).
local function numsub(channel)
  if sharded_pubsub ~= false then
    local r = redis.pcall('PUBSUB', 'SHARDNUMSUB', channel)
    if not classic_only(r) then return r[2] end
  end
  return redis.call('PUBSUB', 'NUMSUB', channel)[2]
end

-- Server time as {ms = ..., us = ...} since the epoch, read once per script run: a run is
-- atomic, so one instant serves all of it (and TIME is a call less each time it is asked).
local now_of_run
local function server_time()
  if not now_of_run then
    local t = redis.call('TIME')
    local s, us = tonumber(t[1]), tonumber(t[2])
    now_of_run = {ms = s * 1000 + math.floor(us / 1000), us = s * 1000000 + us}
  end
  return now_of_run
end

-- Sets the expiry of `key` to `ms` unless it already lasts longer: a re-entry or a
-- renewal never shortens a hold.
-- Returns the lease in force from one reading of the clock: a PTTL read after the PEXPIRE
-- could already show a millisecond less (the server's clock is not frozen in a script).
local function extend(key, ms)
  local left = redis.call('PTTL', key)
  if left < tonumber(ms) then
    redis.call('PEXPIRE', key, ms)
    return tonumber(ms)
  end
  return left
end

-- Keeps `member` queued in the zsets `waiters` (by arrival, server us) and `timeouts` (by
-- the server ms at which its wait gives up): its arrival stays, or is `kept` (an arrival
-- the waiter brought from a lost connection, "" for none) or now; its deadline becomes
-- now + wait_ms. `arrival` is its score in `waiters` (false: not queued yet). Returns the
-- arrival. `ahead_us` (default 0) is taken off a new arrival's score: a lock waiter's
-- priority (lua/include/queue_policy.lua); a kept arrival has it already.
local function stay_queued(waiters, timeouts, member, arrival, kept, now, wait_ms, ahead_us)
  if not arrival then
    arrival = kept ~= '' and kept or string.format('%.0f', now.us - (ahead_us or 0))
    redis.call('ZADD', waiters, arrival, member)
  end
  redis.call('ZADD', timeouts, now.ms + wait_ms, member)
  extend(waiters, wait_ms + QUEUE_MARGIN)
  extend(timeouts, wait_ms + QUEUE_MARGIN)
  return arrival
end

-- Runs `body` (the script's work, returning its reply) once per request: the reply of the
-- first run that changed something (`changed(reply)`, or any run when `changed` is nil)
-- is recorded under `key` (this request's own key, computed by the client from the
-- request id; kept `ttl_ms`, the client's --timeout budget plus a margin: see
-- prim::reply_record_ttl_arg), and the same request sent again (a retry after a lost
-- reply or a timeout, or a stalled server running the original after its retry) gets that
-- reply back without running again. A run that changed nothing (a refusal, "not held",
-- nothing due) leaves no record: running it again is as if only the repeat had run, and
-- its reply says what is true then. Error replies change nothing and are not recorded.
-- No key (the client passed none): nothing is recorded (a read-only request).
local function once(key, ttl_ms, body, changed)
  if not key then return body() end
  local unreadable = first_denied({{'GET', key}})
  if unreadable then return unreadable end
  local seen = redis.call('GET', key)
  local denied = first_denied({{'SET', key, 'r'}})
  if seen then
    -- Recorded anew: a write, so that a WAIT behind this repeat (--sync-replicas) covers
    -- the first run's write too.
    if not denied then redis.call('SET', key, seen, 'PX', tonumber(ttl_ms)) end
    return cmsgpack.unpack(seen)
  end
  if denied then return denied end
  local reply = body()
  if type(reply) == 'table' and not reply.err and (not changed or changed(reply)) then
    redis.call('SET', key, cmsgpack.pack(reply), 'PX', tonumber(ttl_ms))
  end
  return reply
end
