-- Reads one page of a semaphore without changing it (KEYS: see sem_common.lua; KEYS[7]
-- unused), at a cost bounded by the page whatever the number of permits and waiters
-- (O(log n + limit), and O(reservations) for the permits reserved).
-- ARGV[1] first permit to list (rank among the live permits, by lease expiry; -1: none),
-- ARGV[2] first waiter to list (rank in the queue; -1: none), ARGV[3] most of each listed.
-- Reply: {capacity, now_ms, permits_total, next_permit (-1: no more), last_expiry_ms
--         (-1: no permit), waiters_total, next_waiter (-1: no more), reserved,
--         n_permits, id1, owner1, expiry1, ..., n_waiters, member1, arrival_us1, ...,
--         n_grants, member1, ...}: expired permits, waits and reservations are left out;
--        grants (waiters whose permits are reserved) come with the first waiter page;
--        scores come back as the strings stored. Error "BADTYPE <type> <key>" /
--        "MALFORMED <key>" (a capacity that is not a whole number of at most 15 digits).
-- @include common.lua
local denied = first_denied({
  {'TYPE', KEYS[1]}, {'EXISTS', KEYS[8]}, {'HGET', KEYS[2], 'f'}, {'TIME'}, {'ZCOUNT', KEYS[1], '0', '1'},
  {'ZRANGE', KEYS[1], '0', '0'}, {'ZRANGE', KEYS[4], '0', '0'}, {'ZSCORE', KEYS[1], 'm'},
  {'ZRANGEBYSCORE', KEYS[1], '0', '1'}, {'ZCARD', KEYS[1]}, {'HMGET', KEYS[2], 'f'},
})
if denied then return denied end
local err = first_bad_type({'zset', 'hash', 'hash', 'zset', 'zset', 'zset'}, 6)
if err then return err end
if redis.call('EXISTS', KEYS[8]) == 1 then return redis.error_reply('BADTYPE lock ' .. KEYS[8]) end
local cap = redis.call('HGET', KEYS[2], 'capacity') or '0'
if not string.match(cap, '^%d+$') or #cap > 15 then return redis.error_reply('MALFORMED ' .. KEYS[2]) end
local now = server_time().ms
local permit_from, waiter_from, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

-- Permits by lease expiry: the expired ones (not reclaimed yet) are the lowest ranks.
local expired = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. now)
local permits_total = redis.call('ZCARD', KEYS[1]) - expired
local page = {}
if permit_from >= 0 then
  local first = expired + permit_from
  page = redis.call('ZRANGE', KEYS[1], first, first + limit - 1, 'WITHSCORES')
end
local next_permit = -1
if permit_from >= 0 and permit_from + limit < permits_total then next_permit = permit_from + limit end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local last_expiry = -1
if last[2] and tonumber(last[2]) and tonumber(last[2]) >= now then last_expiry = last[2] end

-- Waiters in queue order; a wait whose deadline passed is no longer counted.
local waiters_total = redis.call('ZCOUNT', KEYS[5], now, '+inf')
local queue = {}
if waiter_from >= 0 then
  queue = redis.call('ZRANGE', KEYS[4], waiter_from, waiter_from + limit - 1, 'WITHSCORES')
end
local next_waiter = -1
if waiter_from >= 0 and waiter_from + limit < redis.call('ZCARD', KEYS[4]) then
  next_waiter = waiter_from + limit
end

local reserved = 0
local grants = redis.call('ZRANGEBYSCORE', KEYS[6], now, '+inf')
for _, g in ipairs(grants) do reserved = reserved + (tonumber(string.match(g, '^(%d+):')) or 0) end

local reply = {tonumber(cap), now, permits_total, next_permit, last_expiry, waiters_total,
               next_waiter, reserved, #page / 2}
if #page > 0 then
  local ids = {}
  for i = 1, #page, 2 do ids[#ids + 1] = page[i] end
  local owners = redis.call('HMGET', KEYS[3], unpack(ids))
  for i = 1, #ids do
    reply[#reply + 1] = ids[i]
    reply[#reply + 1] = owners[i] or ''
    reply[#reply + 1] = page[2 * i]
  end
end
local live = {}
for i = 1, #queue, 2 do
  local deadline = redis.call('ZSCORE', KEYS[5], queue[i])
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
