-- Reads a semaphore without changing it (KEYS: see sem_common.lua; KEYS[7] unused).
-- Reply: {capacity, now_ms, n_permits, id1, owner1, expiry1, ..., n_waiters,
--         member1, arrival_us1, ..., n_grants, member1, ...}; expired permits and
--        reservations are left out. Error "BADTYPE <type> <key>" / "MALFORMED <key>".
-- @include common.lua
local denied = first_denied_use({
  {'TYPE', KEYS[1]}, {'EXISTS', KEYS[8]}, {'HGET', KEYS[2], 'f'}, {'TIME'},
  {'ZRANGEBYSCORE', KEYS[1], '0', '1'}, {'ZRANGE', KEYS[4], '0', '0'},
})
if denied then return denied end
local want = {'zset', 'hash', 'hash', 'zset', 'zset', 'zset'}
for i = 1, 6 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' and t ~= want[i] then return redis.error_reply('BADTYPE ' .. t .. ' ' .. KEYS[i]) end
end
if redis.call('EXISTS', KEYS[8]) == 1 then return redis.error_reply('BADTYPE lock ' .. KEYS[8]) end
local cap = redis.call('HGET', KEYS[2], 'capacity') or '0'
if not string.match(cap, '^%d+$') then return redis.error_reply('MALFORMED ' .. KEYS[2]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reply = {tonumber(cap), now}
local permits = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES')
reply[#reply + 1] = #permits / 2
for i = 1, #permits, 2 do
  reply[#reply + 1] = permits[i]
  reply[#reply + 1] = redis.call('HGET', KEYS[3], permits[i]) or ''
  reply[#reply + 1] = tonumber(permits[i + 1])
end
local waiters = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], now, '+inf')) do waiters[m] = true end
local queue = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
local live = {}
for i = 1, #queue, 2 do
  if waiters[queue[i]] then
    live[#live + 1] = queue[i]
    live[#live + 1] = queue[i + 1]
  end
end
reply[#reply + 1] = #live / 2
for _, v in ipairs(live) do reply[#reply + 1] = v end
local grants = redis.call('ZRANGEBYSCORE', KEYS[6], now, '+inf')
reply[#reply + 1] = #grants
for _, g in ipairs(grants) do reply[#reply + 1] = g end
return reply
