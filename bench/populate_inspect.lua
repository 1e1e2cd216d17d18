-- Creates ARGV[3] objects for the inspect benchmark and test, numbered from ARGV[2],
-- under prefix ARGV[1], in rlock's layout (src/prim/key_layout.cpp): even numbers are
-- locks (holder, 10-minute lease, fencing token; every 10th with two queued waiters),
-- odd numbers latches (count 3, one id counted, 1-hour expiry); with ARGV[4] = 'locks',
-- every object is a lock. No KEYS: a benchmark helper for one standalone server, never
-- used by rlock itself.
-- Reply: the number of objects created.
local prefix, first, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local locks_only = ARGV[4] == 'locks'
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = first, first + n - 1 do
  local name = 'obj-' .. i
  if locks_only or i % 2 == 0 then
    local key = prefix .. 'lock:{' .. name .. '}'
    redis.call('HSET', key, 'owner-' .. i, 1)
    redis.call('PEXPIRE', key, 600000)
    redis.call('SET', key .. ':fence', string.format('%.0f', now_us + i))
    if i % 10 == 0 then
      for w = 1, 2 do
        local member = '30000:lock:w' .. w .. 'id' .. i .. ':waiter-' .. w
        redis.call('ZADD', key .. ':waiters', now_us - (3 - w) * 1000000, member)
        redis.call('ZADD', key .. ':timeouts', math.floor(now_us / 1000) + 600000, member)
      end
      redis.call('PEXPIRE', key .. ':waiters', 600000)
      redis.call('PEXPIRE', key .. ':timeouts', 600000)
    end
  else
    local key = prefix .. 'latch:{' .. name .. '}'
    redis.call('SET', key, 3, 'PX', 3600000)
    redis.call('SADD', key .. ':ids', 'shard-' .. i)
    redis.call('PEXPIRE', key .. ':ids', 3600000)
  end
end
return n
