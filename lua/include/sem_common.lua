-- Shared by the semaphore scripts (spliced in at build time where a script says @include).
-- Every semaphore script but the read-only sem_status.lua takes these KEYS first
-- (sem_release.lua a reply record after them):
-- @key permits       (zset permit id -> lease expiry, server ms)
-- @key config        (hash: capacity)
-- @key holders       (hash permit id -> owner)
-- @key waiters       (zset member -> arrival in server microseconds)
-- @key timeouts      (zset member -> server ms at which that wait gives up)
-- @key grants        (zset member -> server ms at which its reservation lapses)
-- @key request       request record (string: the permit ids this request took, or '0' =
--                    given up)
-- @key lock          the lock hash of the same name (a name is one object: it must not be
--                    a lock)
-- @key lock_readers  the shared holds of a lock of the same name (nor a lock held shared)
-- @key notes         (hash "p:" .. permit id -> "<server ms it was taken> <note>", "w:" ..
--                    member -> that wait's note): each field goes with its permit or wait,
--                    and the hash lasts as long as the longest of them
-- A waiters/grants member is "<count>:<wait_id>:<owner>"; its grant channel is the
-- semaphore channel .. ':' .. wait_id. Permits of request wait_id are "<wait_id>.<i>".
-- Free permits = capacity - permits in use - permits reserved by unclaimed grants; after
-- a shrink this may be negative, and nothing is granted until it is positive again.

-- Every write a semaphore script may make, checked against the caller's ACL first.
local function check_sem_rights(channel)
  if not redis.acl_check_cmd then return nil end
  local needs = {
    {'ZADD', K.permits, '1', 'm'}, {'ZREM', K.permits, 'm'}, {'PEXPIRE', K.permits, '1'}, {'DEL', K.permits},
    {'HSET', K.config, 'f', '1'}, {'HSET', K.holders, 'f', '1'}, {'HDEL', K.holders, 'f'},
    {'PEXPIRE', K.holders, '1'}, {'ZADD', K.waiters, '1', 'm'}, {'ZREM', K.waiters, 'm'},
    {'PEXPIRE', K.waiters, '1'}, {'ZADD', K.timeouts, '1', 'm'}, {'ZREM', K.timeouts, 'm'},
    {'PEXPIRE', K.timeouts, '1'}, {'ZADD', K.grants, '1', 'm'}, {'ZREM', K.grants, 'm'},
    {'PEXPIRE', K.grants, '1'}, {'SET', K.request, '1'}, {'HSET', K.notes, 'f', '1'}, {'HDEL', K.notes, 'f'},
    {'PEXPIRE', K.notes, '1'},
    {'SPUBLISH', channel, 'x'}, {'SPUBLISH', channel .. ':0', 'x'},
  }
  return first_denied(needs) or first_denied({
    {'TIME'}, {'PUBSUB', 'SHARDNUMSUB', channel}, {'TYPE', K.permits}, {'EXISTS', K.lock}, {'EXISTS', K.lock_readers}, {'GET', K.request},
    {'HGET', K.config, 'f'}, {'PTTL', K.permits}, {'ZCARD', K.permits}, {'ZRANGE', K.waiters, '0', '0'},
    {'ZRANGEBYSCORE', K.permits, '0', '1'}, {'ZSCORE', K.permits, 'm'}, {'HMGET', K.config, 'f'},
    {'ZCOUNT', K.permits, '0', '1'}, {'PTTL', K.notes},
  })
end

-- The checks every semaphore script starts with (rights, types, well-formed values):
-- nothing is written before they pass.
local function check_sem_keys(channel)
  local denied = check_sem_rights(channel)
  if denied then return denied end
  local err = first_bad_type({{K.permits, 'zset'}, {K.config, 'hash'}, {K.holders, 'hash'},
    {K.waiters, 'zset'}, {K.timeouts, 'zset'}, {K.grants, 'zset'}, {K.request, 'string'}, {K.notes, 'hash'}})
  if err then return err end
  for _, k in ipairs({K.lock, K.lock_readers}) do
    if redis.call('EXISTS', k) == 1 then return redis.error_reply('BADTYPE lock ' .. k) end
  end
  -- At most 15 digits: exact in a double, never rounded or wrapped.
  local cap = redis.call('HGET', K.config, 'capacity')
  if cap and (not string.match(cap, '^%d+$') or #cap > 15) then
    return redis.error_reply('MALFORMED ' .. K.config)
  end
end

local function capacity()
  return tonumber(redis.call('HGET', K.config, 'capacity') or '0')
end

local function member_count(member)
  return tonumber(string.match(member, '^(%d+):')) or 0
end

-- The wait id of a waiters member "<count>:<wait id>:<owner>".
local function wait_id_of(member) return string.match(member, '^%d+:(%x+):') end

local queue = waiter_queue(K.waiters, K.timeouts, wait_id_of, K.notes)
local leave_queue, first_live, second_live, tell_changed =
  queue.leave, queue.first_live, queue.second_live, queue.tell_changed

-- Takes back permits whose lease ran out, reservations nobody claimed in time, and waits
-- whose deadline passed. Every semaphore script that writes starts with it.
local function reclaim(now_ms)
  local expired = redis.call('ZRANGEBYSCORE', K.permits, '-inf', '(' .. now_ms)
  for _, id in ipairs(expired) do
    redis.call('ZREM', K.permits, id)
    redis.call('HDEL', K.holders, id)
    redis.call('HDEL', K.notes, 'p:' .. id)
  end
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K.grants, '-inf', '(' .. now_ms)) do
    redis.call('ZREM', K.grants, m)
  end
  queue.drop_expired(now_ms)
end

-- Permits reserved for granted waiters that have not claimed them yet.
local function reserved()
  local n = 0
  for _, m in ipairs(redis.call('ZRANGE', K.grants, 0, -1)) do n = n + member_count(m) end
  return n
end

local function free_permits()
  return capacity() - redis.call('ZCARD', K.permits) - reserved()
end

-- The first live waiter that the capacity can serve. One asking for more than the whole
-- capacity (a --resize shrank it since it queued) is passed over and woken (unless
-- `quiet`: it was woken already), so that its next attempt tells it so; it does not hold
-- up the queue.
local function first_servable(channel, self, quiet)
  local cap, rank = capacity(), 0
  while true do
    local head = redis.call('ZRANGE', K.waiters, rank, rank)[1]
    if not head then return nil end
    if not queue.live(head, channel) then
      leave_queue(head)
    elseif member_count(head) > cap then
      if head ~= self and not quiet then publish(channel .. ':' .. wait_id_of(head), 'resized') end
      rank = rank + 1
    else
      return head
    end
  end
end

-- Reserves free permits for the head waiters, in queue order, as long as the head's whole
-- request fits (a big request at the head blocks later small ones: no starvation), and
-- wakes each on its own channel (not `self`, the caller, which claims at once). The
-- next expiry is now claim_ms away: the waiter next in line is told so on its own channel,
-- to look again then in case the granted never claim (dead or stopped); nobody else, so
-- that a hand-off costs the same whatever the queue's length (see tell_changed).
local function pass_on(channel, claim_ms, now_ms, self)
  local free = free_permits()
  local granted, head = false, nil
  while free > 0 do
    head = first_servable(channel, self)
    if not head or member_count(head) > free then break end
    leave_queue(head)
    redis.call('ZADD', K.grants, now_ms + tonumber(claim_ms), head)
    extend(K.grants, claim_ms)
    free = free - member_count(head)
    if head ~= self then
      publish(channel .. ':' .. wait_id_of(head), 'grant')
    end
    granted, head = true, nil
  end
  if granted then tell_changed(head or first_servable(channel, self, true), channel, claim_ms, self) end
  return granted
end

-- ms until the earliest permit lease or reservation runs out (something may free up
-- then); -1 when nothing is held.
local function next_expiry(now_ms)
  local best = -1
  for _, zset in ipairs({K.permits, K.grants}) do
    local first = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
    if first[2] then
      local left = math.max(tonumber(first[2]) - now_ms, 0)
      if best < 0 or left < best then best = left end
    end
  end
  return best
end

-- Gives `count` fresh permits "<rid>.<i>" to `owner` for lease_ms, each noting when it was
-- taken and `note` ("" for none); returns their ids.
local function take(rid, count, owner, lease_ms, now_ms, note)
  local ids = {}
  local noted = string.format('%.0f', now_ms) .. ' ' .. note
  for i = 1, count do
    local id = rid .. '.' .. i
    redis.call('ZADD', K.permits, now_ms + lease_ms, id)
    redis.call('HSET', K.holders, id, owner)
    redis.call('HSET', K.notes, 'p:' .. id, noted)
    ids[i] = id
  end
  extend(K.permits, lease_ms)
  extend(K.holders, lease_ms)
  extend(K.notes, lease_ms)
  redis.call('SET', K.request, table.concat(ids, ' '), 'PX', REQUEST_TTL)
  return ids
end

-- Splits a request record "id1 id2 ..." into ids.
local function recorded_ids(record)
  local ids = {}
  for id in string.gmatch(record or '', '%S+') do
    if id ~= '0' then ids[#ids + 1] = id end
  end
  return ids
end
