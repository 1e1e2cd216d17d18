-- Shared by the delayed-queue scripts (spliced in at build time where a script says @include).
-- Every queue script takes the same KEYS:
--   KEYS[1] main hash (field seq: the push sequence); present while the queue holds any
--           item (scheduled, in flight or dead), so that inspect finds the queue
--   KEYS[2] scheduled (zset "<seq>:<id>" -> due, server ms); <seq> is zero-padded to 16
--           digits, so items due in the same millisecond come out in push order
--   KEYS[3] payloads (hash id -> bytes, stored as given)
--   KEYS[4] metadata (hash id -> "<seq> <due ms> <deliveries> <max deliveries, 0 = none>",
--           then " <reason>" for a dead letter that a script put there for another reason
--           than its deliveries, such as a malformed item)
--   KEYS[5] in flight (zset id -> lease expiry, server ms)
--   KEYS[6] leases (hash id -> "<token> <consumer>")
--   KEYS[7] dead letters (list of ids, oldest first; payload and metadata stay)
--   KEYS[8] finished deliveries (zset lease token -> server ms): a delivery's ack or nack
--           whose reply was lost is retried with its token and finds it here, so that it
--           is told "done", not "lease lost"; the consumer forgets its token once it has
--           the reply, and the key expires FINISHED_KEEP_MS after the last finish

-- Expired leases re-promoted per script call: bounds one call's work.
local RECLAIM_BATCH = 100
-- How long a finished delivery's token is kept for a retry whose consumer died before
-- forgetting it (a retry comes within one connect timeout).
local FINISHED_KEEP_MS = 60000

-- The checks every queue script starts with (rights, then types): nothing is written
-- before they pass.
local function check_queue_keys(channel)
  local needs = {
    {'HINCRBY', KEYS[1], 'seq', '1'}, {'DEL', KEYS[1]}, {'ZADD', KEYS[2], '1', 'm'},
    {'ZREM', KEYS[2], 'm'}, {'HSET', KEYS[3], 'f', 'v'}, {'HDEL', KEYS[3], 'f'},
    {'HSET', KEYS[4], 'f', 'v'}, {'HDEL', KEYS[4], 'f'}, {'ZADD', KEYS[5], '1', 'm'},
    {'ZREM', KEYS[5], 'm'}, {'HSET', KEYS[6], 'f', 'v'}, {'HDEL', KEYS[6], 'f'},
    {'RPUSH', KEYS[7], 'x'}, {'LPOP', KEYS[7]}, {'ZADD', KEYS[8], '1', 'm'},
    {'ZREM', KEYS[8], 'm'}, {'PEXPIRE', KEYS[8], '1'}, {'SPUBLISH', channel, 'x'},
  }
  local denied = first_denied(needs) or first_denied({
    {'TIME'}, {'TYPE', KEYS[1]}, {'PTTL', KEYS[1]}, {'HGET', KEYS[4], 'f'}, {'HEXISTS', KEYS[4], 'f'},
    {'HLEN', KEYS[4]}, {'ZRANGE', KEYS[2], '0', '0'}, {'ZRANGEBYSCORE', KEYS[5], '0', '1'},
    {'ZSCORE', KEYS[8], 'm'}, {'HMGET', KEYS[4], 'f'}, {'ZCOUNT', KEYS[2], '0', '1'},
  })
  if denied then return denied end
  return first_bad_type({'hash', 'zset', 'hash', 'hash', 'zset', 'hash', 'list', 'zset'})
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
  local raw = redis.call('HGET', KEYS[4], id)
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
  redis.call('HSET', KEYS[4], id, text)
end

local function member_of(id, m) return m.seq .. ':' .. id end

-- The id inside a scheduled member.
local function id_of(member) return string.match(member, '^%d+:(.*)$') end

-- The main hash goes when the last item does.
local function drop_main_if_empty()
  if redis.call('HLEN', KEYS[4]) == 0 then redis.call('DEL', KEYS[1]) end
end

-- Forgets item `id` entirely (acknowledged, popped without a lease, or read off the dead list).
local function drop_item(id, member)
  if member then redis.call('ZREM', KEYS[2], member) end
  redis.call('ZREM', KEYS[5], id)
  redis.call('HDEL', KEYS[6], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
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
  redis.call('ZREM', KEYS[5], id)
  redis.call('HDEL', KEYS[6], id)
  if m.max > 0 and m.deliveries >= m.max then
    redis.call('RPUSH', KEYS[7], id)
    return
  end
  local first = earliest(KEYS[2])
  redis.call('ZADD', KEYS[2], due, member_of(id, m))
  if not first or due < first then publish(channel, 'due') end
end

-- Moves item `id` (scheduled as `member`, or in flight) to the dead letters with `reason`:
-- an item a script cannot deliver (written by another program, or damaged) is kept for
-- a person to look at, never dropped nor delivered. `m`: its metadata when well-formed,
-- else `due` stands for its due time.
local function bury(id, member, m, due, reason)
  if member then redis.call('ZREM', KEYS[2], member) end
  redis.call('ZREM', KEYS[5], id)
  redis.call('HDEL', KEYS[6], id)
  m = m or {seq = NO_SEQ, due = due, deliveries = 0, max = 0}
  m.reason = reason
  write_meta(id, m)
  redis.call('RPUSH', KEYS[7], id)
  redis.call('HINCRBY', KEYS[1], 'seq', 0)  -- the main hash is there while an item is
end

-- Items whose lease ran out (their consumer crashed, stalled or was cut off) are due
-- again from their lease expiry on. Every script that looks at leases starts with it.
local function reclaim(now_ms, channel)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now_ms, 'WITHSCORES', 'LIMIT', 0,
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
  local l = redis.call('HGET', KEYS[6], id)
  return l ~= false and string.sub(l, 1, #token + 1) == token .. ' '
end

-- Records that the delivery of lease `token` was finished (acknowledged or given back),
-- dropping up to a batch of records older than FINISHED_KEEP_MS.
local function remember_finished(token, now_ms)
  local old = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now_ms - FINISHED_KEEP_MS, 'LIMIT', 0,
    RECLAIM_BATCH)
  if #old > 0 then redis.call('ZREM', KEYS[8], unpack(old)) end
  redis.call('ZADD', KEYS[8], now_ms, token)
  redis.call('PEXPIRE', KEYS[8], FINISHED_KEEP_MS)
end
