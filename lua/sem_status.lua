-- Reads one page of a semaphore without changing it (KEYS below), at a cost bounded by the
-- page whatever the number of permits and waiters (O(log n + limit), and O(reservations)
-- for the permits reserved).
-- @key permits       these as in sem_common.lua (without lock_readers)
-- @key config
-- @key holders
-- @key waiters
-- @key timeouts
-- @key grants
-- @key request       (unused)
-- @key lock
-- @arg permits_from  first permit to list (rank among the live permits, by lease expiry;
--                    -1: none)
-- @arg waiters_from  first waiter to list (rank in the queue; -1: none)
-- @arg limit         most of each listed
-- Reply: {capacity, now_ms, permits_total, next_permit (-1: no more), last_expiry_ms
--         (-1: no permit), waiters_total, next_waiter (-1: no more), reserved,
--         n_permits, id1, owner1, expiry1, ..., n_waiters, member1, arrival_us1, ...,
--         n_grants, member1, ...}: expired permits, waits and reservations are left out;
--        grants (waiters whose permits are reserved) come with the first waiter page;
--        scores come back as the strings stored. Error "BADTYPE <type> <key>" /
--        "MALFORMED <key>" (a capacity that is not a whole number of at most 15 digits).
-- @include common.lua
local denied = first_denied({
  {'TYPE', K.permits}, {'EXISTS', K.lock}, {'HGET', K.config, 'f'}, {'TIME'}, {'ZCOUNT', K.permits, '0', '1'},
  {'ZRANGE', K.permits, '0', '0'}, {'ZRANGE', K.waiters, '0', '0'}, {'ZSCORE', K.permits, 'm'},
  {'ZRANGEBYSCORE', K.permits, '0', '1'}, {'ZCARD', K.permits}, {'HMGET', K.config, 'f'},
})
if denied then return denied end
local err = first_bad_type({{K.permits, 'zset'}, {K.config, 'hash'}, {K.holders, 'hash'}, {K.waiters, 'zset'},
  {K.timeouts, 'zset'}, {K.grants, 'zset'}})
if err then return err end
if redis.call('EXISTS', K.lock) == 1 then return redis.error_reply('BADTYPE lock ' .. K.lock) end
local cap = redis.call('HGET', K.config, 'capacity') or '0'
if not string.match(cap, '^%d+$') or #cap > 15 then return redis.error_reply('MALFORMED ' .. K.config) end
local now = server_time().ms
local permit_from, waiter_from, limit = tonumber(A.permits_from), tonumber(A.waiters_from), tonumber(A.limit)

-- Permits by lease expiry: the expired ones (not reclaimed yet) are the lowest ranks.
local expired = redis.call('ZCOUNT', K.permits, '-inf', '(' .. now)
local permits_total = redis.call('ZCARD', K.permits) - expired
local page = {}
if permit_from >= 0 then
  local first = expired + permit_from
  page = redis.call('ZRANGE', K.permits, first, first + limit - 1, 'WITHSCORES')
end
local next_permit = -1
if permit_from >= 0 and permit_from + limit < permits_total then next_permit = permit_from + limit end
local last = redis.call('ZRANGE', K.permits, -1, -1, 'WITHSCORES')
local last_expiry = -1
if last[2] and tonumber(last[2]) and tonumber(last[2]) >= now then last_expiry = last[2] end

-- Waiters in queue order; a wait whose deadline passed is no longer counted.
local waiters_total = redis.call('ZCOUNT', K.timeouts, now, '+inf')
local queue = {}
if waiter_from >= 0 then
  queue = redis.call('ZRANGE', K.waiters, waiter_from, waiter_from + limit - 1, 'WITHSCORES')
end
local next_waiter = -1
if waiter_from >= 0 and waiter_from + limit < redis.call('ZCARD', K.waiters) then
  next_waiter = waiter_from + limit
end

local reserved = 0
local grants = redis.call('ZRANGEBYSCORE', K.grants, now, '+inf')
for _, g in ipairs(grants) do reserved = reserved + (tonumber(string.match(g, '^(%d+):')) or 0) end

local reply = {tonumber(cap), now, permits_total, next_permit, last_expiry, waiters_total,
               next_waiter, reserved, #page / 2}
if #page > 0 then
  local ids = {}
  for i = 1, #page, 2 do ids[#ids + 1] = page[i] end
  local owners = redis.call('HMGET', K.holders, unpack(ids))
  for i = 1, #ids do
    reply[#reply + 1] = ids[i]
    reply[#reply + 1] = owners[i] or ''
    reply[#reply + 1] = page[2 * i]
  end
end
local live = {}
for i = 1, #queue, 2 do
  local deadline = redis.call('ZSCORE', K.timeouts, queue[i])
  if deadline and tonumber(deadline) and tonumber(deadline) >= now then
    live[#live + 1] = queue[i]
    live[#live + 1] = queue[i + 1]
  end
end
reply[#reply + 1] = #live / 2
for _, v in ipairs(live) do reply[#reply + 1] = v end
local shown = {}
if waiter_from == 0 then
  for i = 1, math.min(#grants, limit) do shown[i] = grants[i] end
end
reply[#reply + 1] = #shown
for _, g in ipairs(shown) do reply[#reply + 1] = g end
return reply
