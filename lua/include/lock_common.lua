-- Shared by the lock scripts (spliced in at build time where a script says @include).
-- Every lock script takes these KEYS first (lock_release.lua and lock_force_release.lua a
-- reply record after them), and declares the ARGV foreign_channel and [floor] read below:
-- @key lock             the lock hash (owner -> reentry count; 0 = kept by --min-hold, busy
--                       for everyone)
-- @key fence            fencing token (string, no TTL)
-- @key waiters          waiters (zset member -> arrival in server microseconds)
-- @key timeouts         (zset member -> server ms at which that wait gives up)
-- @key grant            (string: the member the lock was granted to, until it claims it)
-- @key exec             (string: id of the `rlock exec` hold running inside the lock)
-- @key request          request record (string '1' = this request took the lock, '0' = it
--                       gave up)
-- @key readers          (hash reader id -> "<count>:<expiry server ms>"): shared holds, each
--                       with its own lease; a reader id is the owner (`lock --shared`) or the
--                       owner, byte 31 and the hold id (`exec --shared`, one entry per process)
-- @key reader_grants    (hash member -> server ms at which the reservation lapses): shared
--                       waiters granted, until they claim; a record past that time is dead
-- @key sem              the permits of a semaphore of the same name (a name is one object:
--                       while it has permits in use it is no lock)
-- @key reader_expiries  (zset reader id -> its expiry, server ms): the readers in expiry
--                       order, so that expiring readers and counting the live ones cost
--                       O(log readers) per script, never a pass over all of them
-- @key notes            (hash): the exclusive hold's "owner", "at" (server ms it was
--                       acquired) and "note"; "w:" .. waiters member -> that wait's note.
--                       Each field goes with what it describes, and the hash lasts as long
--                       as the longest of them (see note_hold)
-- @key policy           (hash) queue policies (lua/include/queue_policy.lua): "newest" ->
--                       "<arrival us> <member>", the newest queued --supersede waiter;
--                       "hold" -> the exec hold taken with --supersede; "cancel" -> "<hold
--                       id> <owner>", that hold cancelled by a --cancel-running waiter;
--                       "s:<wait id>" -> the owner whose --supersede request superseded it
-- @key superseded       (zset wait id -> server ms until which its "s:" record is kept)
-- A waiters member is "<lease_ms>:<kind>:<wait_id>:<owner>", kind "lock" or "exec"
-- (exclusive) or "slock" or "sexec" (shared); its grant channel is the lock channel ..
-- ':' .. wait_id.

-- Redisson's lock channel under --layout redisson ('' for none), the script's ARGV
-- foreign_channel: a lock freed is announced there as Redisson's
-- UNLOCK_MESSAGE "0", with PUBLISH (Redisson on a standalone server or Sentinel) and
-- SPUBLISH (Redisson's sharded mode on a Redis 7 cluster). Nothing else is ever published
-- there: Redisson decodes every message on it as a number.
-- @needs-arg foreign_channel
local foreign_channel = A.foreign_channel or ''

-- The least token a quorum asks its members to hand out (0: none), the script's ARGV [floor]
-- (filled by the quorum): the same on every member (redis/quorum.cpp), so that the
-- members that grant agree on the token and none needs it written back, a second round
-- trip. It is taken only while it is at most a minute ahead of this server's clock: a
-- client whose clock ran ahead must not push every later token out of reach (the quorum
-- then writes back the members' own maximum, as when they disagree for any reason).
-- @needs-arg floor
local fence_floor = tonumber(A.floor) or 0
local FLOOR_AHEAD_US = 60 * 1000000

-- Every command a lock script may run (its writes, TIME, PUBSUB, its reads), checked
-- against the caller's ACL first (Redis 7), so that a refusal comes before the first write
-- and changes nothing.
local function check_rights(channel)
  if not acl_check then return nil end
  if foreign_channel ~= '' then
    need('PUBLISH', foreign_channel, '0')
    need('SPUBLISH', foreign_channel, '0')
  end
  local lock, readers, rgrants, rexp = K.lock, K.readers, K.reader_grants, K.reader_expiries
  need('HSET', lock, 'f', '1')
  need('HINCRBY', lock, 'f', '1')
  need('DEL', lock)
  need('PEXPIRE', lock, '1')
  need('SET', K.fence, '1')
  for _, zset in ipairs({K.waiters, K.timeouts}) do
    need('ZADD', zset, '1', 'm')
    need('ZREM', zset, 'm')
    need('PEXPIRE', zset, '1')
  end
  for _, string_key in ipairs({K.grant, K.exec}) do
    need('SET', string_key, 'm')
    need('DEL', string_key)
  end
  need('SET', K.request, '1')
  for _, hash in ipairs({readers, rgrants}) do
    need('HSET', hash, 'f', '1')
    need('HDEL', hash, 'f')
    need('DEL', hash)
    need('PEXPIRE', hash, '1')
  end
  need('HSET', K.notes, 'f', '1')
  need('HDEL', K.notes, 'f')
  need('HGET', K.notes, 'f')
  need('HLEN', K.notes)
  need('PTTL', K.notes)
  need('PEXPIRE', K.notes, '1')
  need('ZADD', rexp, '1', 'm')
  need('ZREM', rexp, 'm')
  need('DEL', rexp)
  need('PEXPIRE', rexp, '1')
  need('HSET', K.policy, 'f', '1')
  need('HDEL', K.policy, 'f')
  need('HGET', K.policy, 'f')
  need('PEXPIRE', K.policy, '1')
  need('PTTL', K.policy)
  need('ZADD', K.superseded, '1', 'm')
  need('ZREM', K.superseded, 'm')
  need('ZRANGEBYSCORE', K.superseded, '0', '1')
  need('PEXPIRE', K.superseded, '1')
  need('PTTL', K.superseded)
  need('SPUBLISH', channel, 'x')
  need('SPUBLISH', channel .. ':0', 'x')
  need('TIME')
  need('PUBSUB', 'SHARDNUMSUB', channel)
  need('TYPE', lock)
  need('EXISTS', lock)
  need('GET', K.fence)
  need('HGET', lock, 'f')
  need('HGETALL', lock)
  need('HVALS', lock)
  need('HKEYS', readers)
  need('HEXISTS', readers, 'f')
  need('PTTL', lock)
  need('ZRANGE', K.waiters, '0', '0')
  need('ZRANGEBYSCORE', K.timeouts, '0', '1')
  need('ZSCORE', K.waiters, 'm')
  need('HLEN', readers)
  need('ZCARD', rexp)
  need('ZCOUNT', rexp, '0', '1')
  need('ZRANGEBYSCORE', rexp, '0', '1')
  return refusal()
end

-- The types of the lock keys (but the semaphore's, which must not exist, and the reader
-- expiries, checked on their own): those up to the request record first.
local LOCK_KEY_TYPES = {{K.lock, 'hash'}, {K.fence, 'string'}, {K.waiters, 'zset'}, {K.timeouts, 'zset'},
  {K.grant, 'string'}, {K.exec, 'string'}, {K.request, 'string'}, {K.readers, 'hash'},
  {K.reader_grants, 'hash'}, {K.notes, 'hash'}, {K.policy, 'hash'}, {K.superseded, 'zset'}}

-- An error reply when the fencing token is not a number; nil when it is, or is absent.
local function malformed_fence()
  local stored = redis.call('GET', K.fence)
  if stored and not tonumber(stored) then return redis.error_reply('MALFORMED ' .. K.fence) end
end

local READER_VALUE = '^(%d+):(%d+)$'

-- The checks every lock script starts with (types, well-formed values, ACL rights for
-- publishing on `channel`): nothing is written before they pass. Of the readers, only the
-- entry `reader` (the caller's, or nil) is read, unless the expiry index disagrees with the
-- readers hash (something else wrote it): then every entry, once, before the index is rebuilt.
local function check_lock_keys(channel, reader)
  local denied = check_rights(channel)
  if denied then return denied end
  local err = first_bad_type(LOCK_KEY_TYPES) or bad_type(K.reader_expiries, 'zset')
  if err then return err end
  if redis.call('EXISTS', K.sem) == 1 then
    return redis.error_reply('BADTYPE semaphore ' .. K.sem)
  end
  err = malformed_fence()
  if err then return err end
  -- Redisson's RRateLimiter config (under --layout redisson; no lock hash has two fields
  -- named so): its numbers are no holders' counts.
  if redis.call('HGET', K.lock, 'rate') and redis.call('HGET', K.lock, 'interval') then
    return redis.error_reply('BADTYPE Redisson-RRateLimiter ' .. K.lock)
  end
  for _, v in ipairs(redis.call('HVALS', K.lock)) do
    if not string.match(v, '^%d+$') then return redis.error_reply('MALFORMED ' .. K.lock) end
  end
  local values
  if redis.call('ZCARD', K.reader_expiries) ~= redis.call('HLEN', K.readers) then
    values = redis.call('HVALS', K.readers)
  elseif reader then
    values = {redis.call('HGET', K.readers, reader) or '0:0'}
  end
  for _, v in ipairs(values or {}) do
    if not string.match(v, READER_VALUE) then return redis.error_reply('MALFORMED ' .. K.readers) end
  end
end

local function last_fence()
  return tonumber(redis.call('GET', K.fence) or '0')
end

-- Stores and returns the next fencing token: max(last + 1, server microseconds, a quorum's
-- floor), so it never goes backwards, even when the stored counter was lost. `last`: the
-- stored token, when the caller read it already.
local function next_fence(last)
  local now = server_time().us
  local floor = fence_floor <= now + FLOOR_AHEAD_US and fence_floor or 0
  local fence = math.max((last or last_fence()) + 1, now, floor)
  redis.call('SET', K.fence, string.format('%.0f', fence))
  return fence
end

local function remember(outcome)
  redis.call('SET', K.request, outcome, 'PX', REQUEST_TTL)
end

local function is_shared(kind) return kind == 'slock' or kind == 'sexec' end

-- Records the fresh exclusive hold of `holder` (acquired now, with `note`, "" for none) for
-- `ms`, the lock hash's lease: a re-entry keeps the first record (see the README). The
-- notes hash lasts as long as the longest thing it describes; a hold or wait that ends
-- takes its fields with it, so a hash that outlives them holds nothing stale for long.
local function note_hold(holder, note, ms)
  redis.call('HSET', K.notes, 'owner', holder, 'at', string.format('%.0f', server_time().ms),
    'note', note)
  extend(K.notes, ms)
end

local function drop_hold_note()
  redis.call('HDEL', K.notes, 'owner', 'at', 'note')
end

-- The note of the queued wait `member` ("" for none).
local function wait_note(member)
  return redis.call('HGET', K.notes, 'w:' .. member) or ''
end

-- "<lease_ms>", "<kind>", "<wait_id>", "<owner>" of a waiters member.
local function parse_member(m)
  return string.match(m, '^(%d+):(%a+):(%x+):(.*)$')
end

local queue = waiter_queue(K.waiters, K.timeouts, function(m) return select(3, parse_member(m)) end,
  K.notes)
local leave_queue, second_live, tell_changed = queue.leave, queue.second_live, queue.tell_changed

-- The longest-waiting waiter that is still there to take the lock (its wait has not run
-- out and its grant channel has a subscriber); the others are dropped on the way.
local function first_live(channel)
  queue.drop_expired(server_time().ms)
  return queue.first_live(channel)
end

local function reader_id(kind, owner, hold_id)
  if kind == 'sexec' then return owner .. '\31' .. hold_id end
  return owner
end

-- count, expiry (server ms) of the reader `id` while its lease lasts, else nil (an entry
-- past its expiry is dropped on the way). A value that is no reader entry counts as none:
-- check_lock_keys refused such values, unless something else overwrote one since.
local function reader_live(id, now_ms)
  local v = redis.call('HGET', K.readers, id)
  if not v then return nil end
  local c, e = string.match(v, READER_VALUE)
  if c and tonumber(e) > now_ms then return tonumber(c), tonumber(e) end
  redis.call('HDEL', K.readers, id)
  redis.call('ZREM', K.reader_expiries, id)
  return nil
end

local function reader_set(id, count, expiry, now_ms)
  local at = string.format('%.0f', expiry)
  redis.call('HSET', K.readers, id, count .. ':' .. at)
  redis.call('ZADD', K.reader_expiries, at, id)
  extend(K.readers, expiry - now_ms)  -- the hash lives as long as its longest reader
  extend(K.reader_expiries, expiry - now_ms)
end

local function reader_del(id)
  redis.call('HDEL', K.readers, id)
  redis.call('ZREM', K.reader_expiries, id)
end

-- Expired readers dropped per script run: the cost of a run stays bounded however many
-- expire at once; the rest go in later runs and meanwhile count as nothing (see below).
local PURGE_BATCH = 200

-- Rebuilds the expiry index from the readers hash (called when their sizes differ: readers
-- written by an rlock without the index): once, after which they agree again.
local function index_readers()
  redis.call('DEL', K.reader_expiries)
  local all = redis.call('HGETALL', K.readers)
  for i = 1, #all, 2 do
    local _, e = string.match(all[i + 1], READER_VALUE)
    if e then redis.call('ZADD', K.reader_expiries, e, all[i]) end
  end
  local pttl = redis.call('PTTL', K.readers)
  if pttl > 0 then redis.call('PEXPIRE', K.reader_expiries, pttl) end
end

-- Drops (a bounded batch of) the readers whose own lease ran out; returns how many live
-- readers there are and the least time (ms) until one of them expires (-1 when none).
local function purge_readers(now_ms)
  local n = redis.call('HLEN', K.readers)
  local indexed = redis.call('ZCARD', K.reader_expiries)
  if n == 0 and indexed == 0 then return 0, -1 end  -- the common case of no reader at all
  if n ~= indexed then index_readers() end
  local now = string.format('%.0f', now_ms)
  local gone = redis.call('ZRANGEBYSCORE', K.reader_expiries, '-inf', now, 'LIMIT', 0, PURGE_BATCH)
  if #gone > 0 then
    redis.call('HDEL', K.readers, unpack(gone))
    redis.call('ZREM', K.reader_expiries, unpack(gone))
  end
  local left = redis.call('ZCOUNT', K.reader_expiries, '(' .. now, '+inf')
  local first = redis.call('ZRANGEBYSCORE', K.reader_expiries, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #first == 0 then return left, -1 end
  return left, tonumber(first[2]) - now_ms
end

-- Tells the observers of the lock (`rlock elect --observe`, subscribed to the lock channel
-- .. ':observe'; wait ids are hex, so no wait's grant channel has that name) that it has a
-- new exclusive holder. Only when one listens: a PUBLISH is replicated, and most locks have
-- no observer. Never fails the request that took the lock: an ACL that refuses PUBSUB or
-- the channel leaves the observers to find out at the lease they last saw.
local function announce_holder(channel)
  local observe = channel .. ':observe'
  pcall(function()
    if numsub(observe) > 0 then publish(observe, 'held') end
  end)
end

-- Tells the holders of the lock that a hold may have been taken from them on the server
-- (unlock --force, --cancel-running): exec's watchdog, subscribed to the lock channel ..
-- ':holder' (no wait's grant channel: wait ids are hex), renews at once to find out, so
-- that the job stops now rather than at its next renewal. Only when one listens, and never
-- failing the request, as announce_holder.
local function tell_holders(channel)
  local holder = channel .. ':holder'
  pcall(function()
    if numsub(holder) > 0 then publish(holder, 'check') end
  end)
end

-- Reserves the free lock for the exclusive waiter `head` for claim_ms and wakes it; it
-- confirms with a claim (lock_acquire.lua) or the reservation runs out and the next waiter
-- gets its turn. The reservation is a fresh hold and takes its fencing token now: its
-- owner may re-enter it before the claim, and must not get the previous holder's token.
local function grant(head, channel, claim_ms)
  local _, kind, wait_id, waiter = parse_member(head)
  local note = wait_note(head)
  leave_queue(head)
  next_fence()
  redis.call('HSET', K.lock, waiter, 1)
  redis.call('PEXPIRE', K.lock, claim_ms)
  note_hold(waiter, note, claim_ms)
  if kind == 'exec' then redis.call('SET', K.exec, wait_id, 'PX', claim_ms) end
  redis.call('SET', K.grant, head, 'PX', claim_ms)
  publish(channel .. ':' .. wait_id, 'grant')
end

-- Reserves a shared hold for the waiter `head` (a reader entry that lasts claim_ms) and
-- wakes it; its claim gives the entry its own lease.
local function grant_reader(head, channel, claim_ms, now_ms)
  local _, kind, wait_id, waiter = parse_member(head)
  leave_queue(head)
  local id = reader_id(kind, waiter, wait_id)
  local c, expiry = reader_live(id, now_ms)
  reader_set(id, (c or 0) + 1, math.max(expiry or 0, now_ms + claim_ms), now_ms)
  redis.call('HSET', K.reader_grants, head, string.format('%.0f', now_ms + claim_ms))
  extend(K.reader_grants, claim_ms)
  publish(channel .. ':' .. wait_id, 'grant')
end

-- Hands the lock to whoever is next, if it is free for them: the run of shared waiters at
-- the head of the queue (all of them at once), or the exclusive waiter at the head once
-- no reader is left. With nobody to hand it to, announces it free.
local function pass_on(channel, claim_ms)
  local now_ms = server_time().ms
  local readers = purge_readers(now_ms)
  if redis.call('EXISTS', K.lock) == 1 then return end  -- a writer, or its reservation
  local granted = 0
  local head = first_live(channel)
  while head do
    local _, kind = parse_member(head)
    if not is_shared(kind) then
      if readers == 0 and granted == 0 then
        grant(head, channel, claim_ms)
        granted = 1
        head = first_live(channel)
      end
      break
    end
    grant_reader(head, channel, claim_ms, now_ms)
    granted = granted + 1
    head = first_live(channel)
  end
  -- The holders now expire within claim_ms unless the granted claim: the waiter next in
  -- line must look again then, in case they never do (dead or stopped).
  if granted > 0 then tell_changed(head, channel, claim_ms) end
  if granted == 0 and readers == 0 then
    publish(channel, 'released')
    if foreign_channel ~= '' then
      redis.call('PUBLISH', foreign_channel, '0')
      if sharded_pubsub ~= false then redis.pcall('SPUBLISH', foreign_channel, '0') end
    end
  end
end

-- Releases one level held by `owner` (the caller checked that it holds one). `keep` > 0 at
-- the last level leaves the lock held, count 0, for that many ms (--min-hold).
local function release_level(owner, count, keep, channel, claim_ms)
  if count > 1 then
    return redis.call('HINCRBY', K.lock, owner, -1)
  end
  -- A reservation released before its claim ends here, and its grant with it: a late claim
  -- must find nothing to claim.
  redis.call('DEL', K.grant)
  if count == 1 and keep > 0 then
    redis.call('HSET', K.lock, owner, 0)
    redis.call('PEXPIRE', K.lock, keep)
    -- The record goes with the kept hold: no longer than it, unless waits' notes are there.
    if redis.call('HLEN', K.notes) <= 3 then
      redis.call('PEXPIRE', K.notes, keep)
    else
      extend(K.notes, keep)
    end
    -- Nothing is handed over when the keep runs out: the head looks again then, and the
    -- waiter behind it too, in case the head is stopped (it then grants the head).
    tell_changed(first_live(channel), channel, keep)
    tell_changed(second_live(channel), channel, keep)
    return 0
  end
  redis.call('DEL', K.lock)
  drop_hold_note()
  pass_on(channel, claim_ms)
  return 0
end

-- Drops one level of the shared hold `id`; at its last level the lock may be free for the
-- next waiters. Returns the levels left, or nil when there is no such hold.
local function release_shared(id, now_ms, channel, claim_ms)
  local c, expiry = reader_live(id, now_ms)
  if not c then return nil end
  if c > 1 then
    reader_set(id, c - 1, expiry, now_ms)
    return c - 1
  end
  reader_del(id)
  pass_on(channel, claim_ms)
  return 0
end

-- Appends owner, count pairs of the writer and of the live readers (a reader's owner
-- without its hold id) to `reply`: every reader, or with `limit` the `limit` that expire
-- first (a busy reply stays small and cheap beside any number of readers).
local function holders_reply(reply, limit)
  for _, v in ipairs(redis.call('HGETALL', K.lock)) do reply[#reply + 1] = v end
  local now_ms = server_time().ms
  local function add(id, value)
    local c, e = string.match(value or '', READER_VALUE)
    if c and tonumber(e) > now_ms then
      reply[#reply + 1] = string.match(id, '^([^\31]*)')
      reply[#reply + 1] = c
    end
  end
  if limit then
    local now = '(' .. string.format('%.0f', now_ms)
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', K.reader_expiries, now, '+inf', 'LIMIT', 0, limit)) do
      add(id, redis.call('HGET', K.readers, id))
    end
    return reply
  end
  local all = redis.call('HGETALL', K.readers)
  for i = 1, #all, 2 do add(all[i], all[i + 1]) end
  return reply
end

-- When the holders' expiry frees the lock for a waiter: the writer's lease, else the
-- soonest reader's (ms; -1 = no expiry, -2 = nothing held).
local function holders_ttl(soonest_reader)
  local pttl = redis.call('PTTL', K.lock)
  if pttl ~= -2 then return pttl end
  if soonest_reader >= 0 then return soonest_reader end
  return -2
end
