-- Shared by the delayed-queue scripts (spliced in at build time where a script says @include).
-- Every queue script but the read-only queue_inspect.lua takes these KEYS first
-- (queue_pop.lua, queue_push.lua and queue_dead_pop.lua a reply record after them):
-- @key main       main hash (field seq: the push sequence); present while the queue holds
--                 any item (scheduled, in flight or dead), so that inspect finds the queue
-- @key scheduled  (zset "<seq>:<id>" -> due, server ms); <seq> is zero-padded to 16
--                 digits, so items due in the same millisecond come out in push order
-- @key payloads   (hash id -> bytes, stored as given)
-- @key metadata   (hash id -> "<seq> <due ms> <deliveries> <max deliveries, 0 = none>",
--                 then " <reason>" for a dead letter that a script put there for another
--                 reason than its deliveries, such as a malformed item)
-- @key in_flight  (zset id -> lease expiry, server ms)
-- @key leases     (hash id -> "<token> <consumer>")
-- @key dead       dead letters (list of ids, oldest first; payload and metadata stay)
-- @key finished   finished deliveries (zset lease token -> server ms): a delivery's ack or
--                 nack whose reply was lost is retried with its token and finds it here, so
--                 that it is told "done", not "lease lost"; the consumer forgets its token
--                 once it has the reply, and the key expires FINISHED_KEEP_MS after the
--                 last finish

-- Expired leases re-promoted per script call: bounds one call's work.
local RECLAIM_BATCH = 100
-- How long a finished delivery's token is kept for a retry whose consumer died before
-- forgetting it (a retry comes within one connect timeout).
local FINISHED_KEEP_MS = 60000

-- The checks every queue script starts with (rights, then types): nothing is written
-- before they pass.
local function check_queue_keys(channel)
  local needs = {
    {'HINCRBY', K.main, 'seq', '1'}, {'DEL', K.main}, {'ZADD', K.scheduled, '1', 'm'},
    {'ZREM', K.scheduled, 'm'}, {'HSET', K.payloads, 'f', 'v'}, {'HDEL', K.payloads, 'f'},
    {'HSET', K.metadata, 'f', 'v'}, {'HDEL', K.metadata, 'f'}, {'ZADD', K.in_flight, '1', 'm'},
    {'ZREM', K.in_flight, 'm'}, {'HSET', K.leases, 'f', 'v'}, {'HDEL', K.leases, 'f'},
    {'RPUSH', K.dead, 'x'}, {'LPOP', K.dead}, {'ZADD', K.finished, '1', 'm'},
    {'ZREM', K.finished, 'm'}, {'PEXPIRE', K.finished, '1'}, {'SPUBLISH', channel, 'x'},
  }
  local denied = first_denied(needs) or first_denied({
    {'TIME'}, {'TYPE', K.main}, {'PTTL', K.main}, {'HGET', K.metadata, 'f'}, {'HEXISTS', K.metadata, 'f'},
    {'HLEN', K.metadata}, {'ZRANGE', K.scheduled, '0', '0'}, {'ZRANGEBYSCORE', K.in_flight, '0', '1'},
    {'ZSCORE', K.finished, 'm'}, {'HMGET', K.metadata, 'f'}, {'ZCOUNT', K.scheduled, '0', '1'},
  })
  if denied then return denied end
  return first_bad_type({{K.main, 'hash'}, {K.scheduled, 'zset'}, {K.payloads, 'hash'}, {K.metadata, 'hash'},
    {K.in_flight, 'zset'}, {K.leases, 'hash'}, {K.dead, 'list'}, {K.finished, 'zset'}})
end

-- How many bytes of a malformed value a dead letter's reason quotes.
local REASON_QUOTE = 64
-- The sequence of an item put back or buried by a script: before any push's, so that it
-- comes first among the items due in the same millisecond (it was taken first).
local NO_SEQ = '0000000000000000'

-- `s` quoted for a reason: printable ASCII (other bytes as \xNN), at most REASON_QUOTE
-- bytes of it, so that the reason is always valid text whatever another program wrote.
local function quoted(s)
  local cut = string.gsub(string.sub(s, 1, REASON_QUOTE), '[^ -~]',
    function(c) return string.format('\\x%02x', string.byte(c)) end)
  if #s > REASON_QUOTE then cut = cut .. '...' end
  return "'" .. cut .. "'"
end

-- The metadata of item `id` as a table; else nil and what is wrong with it (the item is
-- unknown, or its metadata is not well-formed: numbers longer than 15 digits would not
-- survive Lua's doubles).
local function read_meta(id)
  local raw = redis.call('HGET', K.metadata, id)
  if not raw then return nil, 'no metadata' end
  local seq, due, n, max, rest = string.match(raw, '^(%d+) (%d+) (%d+) (%d+)(.*)$')
  if not seq or #due > 15 or #n > 15 or #max > 15
      or (rest ~= '' and string.sub(rest, 1, 1) ~= ' ') then
    return nil, 'malformed metadata: ' .. quoted(raw)
  end
  local reason = nil
  if rest ~= '' then reason = string.sub(rest, 2) end
  return {seq = seq, due = tonumber(due), deliveries = tonumber(n), max = tonumber(max),
    reason = reason}
end

local function write_meta(id, m)
  local text = string.format('%s %.0f %d %d', m.seq, m.due, m.deliveries, m.max)
  if m.reason then text = text .. ' ' .. m.reason end
  redis.call('HSET', K.metadata, id, text)
end

local function member_of(id, m) return m.seq .. ':' .. id end

-- The id inside a scheduled member.
local function id_of(member) return string.match(member, '^%d+:(.*)$') end

-- The main hash goes when the last item does.
local function drop_main_if_empty()
  if redis.call('HLEN', K.metadata) == 0 then redis.call('DEL', K.main) end
end

-- Forgets item `id` entirely (acknowledged, popped without a lease, or read off the dead list).
local function drop_item(id, member)
  if member then redis.call('ZREM', K.scheduled, member) end
  redis.call('ZREM', K.in_flight, id)
  redis.call('HDEL', K.leases, id)
  redis.call('HDEL', K.payloads, id)
  redis.call('HDEL', K.metadata, id)
  drop_main_if_empty()
end

local function earliest(key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #first == 0 then return nil end
  return tonumber(first[2])
end

-- Schedules item `id` (its lease, if any, is gone) for `due`, or moves it to the dead
-- letters when it has had its maximum of deliveries. Wakes the consumers when it is now
-- the earliest item.
local function reschedule(id, m, due, channel)
  redis.call('ZREM', K.in_flight, id)
  redis.call('HDEL', K.leases, id)
  if m.max > 0 and m.deliveries >= m.max then
    redis.call('RPUSH', K.dead, id)
    return
  end
  local first = earliest(K.scheduled)
  redis.call('ZADD', K.scheduled, due, member_of(id, m))
  if not first or due < first then publish(channel, 'due') end
end

-- Moves item `id` (scheduled as `member`, or in flight) to the dead letters with `reason`:
-- an item a script cannot deliver (written by another program, or damaged) is kept for
-- a person to look at, never dropped nor delivered. `m`: its metadata when well-formed,
-- else `due` stands for its due time.
local function bury(id, member, m, due, reason)
  if member then redis.call('ZREM', K.scheduled, member) end
  redis.call('ZREM', K.in_flight, id)
  redis.call('HDEL', K.leases, id)
  m = m or {seq = NO_SEQ, due = due, deliveries = 0, max = 0}
  m.reason = reason
  write_meta(id, m)
  redis.call('RPUSH', K.dead, id)
  redis.call('HINCRBY', K.main, 'seq', 0)  -- the main hash is there while an item is
end

-- Items whose lease ran out (their consumer crashed, stalled or was cut off) are due
-- again from their lease expiry on. Every script that looks at leases starts with it.
local function reclaim(now_ms, channel)
  local expired = redis.call('ZRANGEBYSCORE', K.in_flight, '-inf', now_ms, 'WITHSCORES', 'LIMIT', 0,
    RECLAIM_BATCH)
  for i = 1, #expired, 2 do
    local id = expired[i]
    local m, problem = read_meta(id)
    if m then
      reschedule(id, m, tonumber(expired[i + 1]), channel)
    else
      bury(id, nil, nil, tonumber(expired[i + 1]), problem)
    end
  end
end

-- The lease of `id` iff it is `token`'s (after reclaim: an expired lease is nobody's).
local function lease_is(id, token)
  local l = redis.call('HGET', K.leases, id)
  return l ~= false and string.sub(l, 1, #token + 1) == token .. ' '
end

-- Records that the delivery of lease `token` was finished (acknowledged or given back),
-- dropping up to a batch of records older than FINISHED_KEEP_MS.
local function remember_finished(token, now_ms)
  local old = redis.call('ZRANGEBYSCORE', K.finished, '-inf', now_ms - FINISHED_KEEP_MS, 'LIMIT', 0,
    RECLAIM_BATCH)
  if #old > 0 then redis.call('ZREM', K.finished, unpack(old)) end
  redis.call('ZADD', K.finished, now_ms, token)
  redis.call('PEXPIRE', K.finished, FINISHED_KEEP_MS)
end
