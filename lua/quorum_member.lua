-- Whether a quorum member's data may be younger than a lease it could have granted (a
-- restart without persistence): sent in the same write ahead of every request that takes
-- or renews something on a quorum (redis/quorum.cpp).
-- KEYS[1] the longest lease any rlock asked this member for (ms, no TTL), KEYS[2] when
-- rlock first wrote to this data set (server ms, no TTL: gone with the data)
-- ARGV[1] the lease this request asks for (ms)
-- Reply: {uptime_ms, first_write_ms, longest_lease_ms, now_ms}: the longest lease as it was
-- before this request (the longest a hold granted so far can have).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local longest = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tonumber(ARGV[1]) > longest then redis.call('SET', KEYS[1], ARGV[1]) end
redis.call('SET', KEYS[2], string.format('%.0f', now), 'NX')
local since = tonumber(redis.call('GET', KEYS[2])) or now
local uptime = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)')) or 0
return {uptime * 1000, since, longest, now}
