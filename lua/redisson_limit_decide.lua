-- One decision of Redisson's RRateLimiter (--layout redisson): trySetRate when the limiter
-- has no config yet, then tryAcquire, with the same keys, member encoding and arithmetic as
-- RedissonRateLimiter.java (tests/redisson/redisson_limit_*.lua hold its scripts verbatim),
-- except that the timestamp is the server's clock where Redisson passes the client's.
-- @key config          the bare name (hash: rate, interval ms, type '0' OVERALL | '1'
--                      PER_CLIENT, keepAliveTime ms)
-- @key value           {name}:value (string: permits left)
-- @key client_value    {name}:value:<client> ({name}:value when there is no client)
-- @key permits         {name}:permits (zset: struct.pack('Bc0I', #random, random, permits)
--                      -> the ms it was taken)
-- @key client_permits  {name}:permits:<client> ({name}:permits when there is no client)
-- @key [reply]         this request's reply record (see once in common.lua), absent for a
--                      peek: a repeated decision returns the first one and takes no more
-- @arg rate
-- @arg interval        ms
-- @arg type            '0' OVERALL | '1' PER_CLIENT
-- @arg cost            permits, 1..rate
-- @arg random          the permit's random bytes (Redisson's generateIdArray: 16)
-- @arg peek            '1' to decide without taking or writing anything
-- @arg reconfigure     '1' to store rate, interval and type over others (Redisson's
--                      setRate with keepState: the permits taken in the window still count)
-- @arg reply_ttl       ms the reply record is kept
-- Reply: {1, allowed 0|1, remaining, retry_after_ms, reset_after_ms, now_ms};
--        {0, rate, interval, type}: another config is stored, nothing changed.
--        Errors "BADTYPE <type> <key>" / "MALFORMED <key>" / NOPERM.
-- @include common.lua
return once(A.peek ~= '1' and K.reply, A.reply_ttl, function()
do
  local denied = A.peek ~= '1' and first_denied({
    {'HSET', K.config, 'rate', '1'},
    {'PEXPIRE', K.config, '1'}, {'PEXPIRE', K.value, '1'}, {'PEXPIRE', K.permits, '1'},
    {'SET', K.value, '1'}, {'DECRBY', K.value, '1'}, {'DEL', K.value, K.permits},
    {'ZADD', K.permits, '1', 'm'}, {'ZREMRANGEBYSCORE', K.permits, '0', '1'},
  }) or first_denied({
    {'TIME'}, {'TYPE', K.config}, {'EXISTS', K.config}, {'HMGET', K.config, 'f'},
    {'HGET', K.config, 'f'}, {'PTTL', K.config},
    {'GET', K.value}, {'ZRANGE', K.permits, '0', '-1', 'WITHSCORES'},
  })
  if denied then return denied end
end
local err = first_bad_type({{K.config, 'hash'}, {K.value, 'string'},
                            {K.client_value, 'string'}, {K.permits, 'zset'},
                            {K.client_permits, 'zset'}})
if err then return err end

local stored = redis.call('HMGET', K.config, 'rate', 'interval', 'type', 'keepAliveTime')
local exists = redis.call('EXISTS', K.config) == 1
if exists then
  if not stored[1] and not stored[2] and not stored[3] then
    return redis.error_reply('BADTYPE hash ' .. K.config)  -- an RLock's, a map's, ...
  end
  for i = 1, 4 do
    local v = stored[i]
    if (i < 4 or v) and (not v or not string.match(v, '^%d+$') or #v > 15) then
      return redis.error_reply('MALFORMED ' .. K.config)
    end
  end
  if stored[3] ~= '0' and stored[3] ~= '1' then return redis.error_reply('MALFORMED ' .. K.config) end
end
local differs = exists and (stored[1] ~= A.rate or stored[2] ~= A.interval or stored[3] ~= A.type)
if differs and A.reconfigure ~= '1' then
  return {0, tonumber(stored[1]), tonumber(stored[2]), tonumber(stored[3])}
end

local now = server_time().ms
local peek = A.peek == '1'
local rate, interval, cost = tonumber(A.rate), tonumber(A.interval), tonumber(A.cost)
local valueName, permitsName = K.value, K.permits
if A.type == '1' then valueName, permitsName = K.client_value, K.client_permits end

local function permits_of(member)
  local _, permits = struct.unpack('Bc0I', member)
  return permits
end
local function sum(members)
  local total = 0
  for _, v in ipairs(members) do total = total + permits_of(v) end
  return total
end

-- Redisson's keepAliveTime, else the config's TTL, on the value and the log.
local function keep_alive()
  local keepAliveTime = redis.call('hget', K.config, 'keepAliveTime')
  if (keepAliveTime ~= false and tonumber(keepAliveTime) > 0) then
    redis.call('pexpire', K.config, keepAliveTime)
    redis.call('pexpire', valueName, keepAliveTime)
    redis.call('pexpire', permitsName, keepAliveTime)
  else
    local ttl = redis.call('pttl', K.config)
    if ttl > 0 then
      redis.call('pexpire', valueName, ttl)
      redis.call('pexpire', permitsName, ttl)
    end
  end
end

if not peek and not exists then
  -- trySetRate(type, rate, interval): its HSETNXs in its order (keepAliveTime 0), as one
  -- HSET on the hash that does not exist (one right less to ask for).
  redis.call('hset', K.config, 'rate', A.rate, 'interval', A.interval, 'keepAliveTime', '0',
             'type', A.type)
elseif differs then  -- setRate(RateLimiterArgs ... keepState(true)), keepAliveTime kept
  redis.call('hset', K.config, 'rate', A.rate, 'interval', A.interval, 'type', A.type)
  if stored[3] ~= A.type then
    redis.call('del', K.value, K.client_value, K.permits, K.client_permits)
  else
    redis.call('zremrangebyscore', permitsName, 0, now - interval)
    local newValue = math.max(rate - sum(redis.call('zrange', permitsName, 0, -1)), 0)
    redis.call('set', valueName, newValue)
    keep_alive()
  end
end

-- tryAcquire: the permits whose window ended come back, capped at rate less those in it.
local log = redis.call('zrange', permitsName, 0, -1, 'withscores')
local currentValue = redis.call('get', valueName)
local live, used, released = {}, 0, 0
for i = 1, #log, 2 do
  local permits, at = permits_of(log[i]), tonumber(log[i + 1])
  if at <= now - interval then
    released = released + permits
  else
    used = used + permits
    live[#live + 1] = {at, permits}
  end
end
local current = rate
if currentValue ~= false then
  current = tonumber(currentValue)
  if released > 0 then
    current = current + released > rate and rate - used or current + released
  end
end

local allowed = current >= cost
local reset = #live > 0 and math.max(live[#live][1] + interval - now, 0) or 0
local retry = 0
if not allowed then
  -- The first permit whose window's end frees enough, as the script would count then; a
  -- Java client's release() or a clock that went back can make it sooner, never later.
  -- No permit in the window to wait for (the log was deleted beside its value): a window.
  retry = #live > 0 and live[1][1] + interval - now or interval
  local freed, left = 0, used
  for _, p in ipairs(live) do
    freed, left = freed + p[2], left - p[2]
    local then_value = current + freed > rate and rate - left or current + freed
    if then_value >= cost then
      retry = p[1] + interval - now
      break
    end
  end
  retry = math.max(retry, 1)
end
local remaining = math.max(allowed and not peek and current - cost or current, 0)
if allowed and not peek then reset = interval end
local reply = {1, allowed and 1 or 0, remaining, retry, reset, now}
if peek then return reply end

if currentValue ~= false then
  if released > 0 then
    redis.call('zremrangebyscore', permitsName, 0, now - interval)
    redis.call('set', valueName, current)
  end
  if allowed then
    redis.call('zadd', permitsName, now, struct.pack('Bc0I', string.len(A.random), A.random, cost))
    redis.call('decrby', valueName, cost)
  end
else
  redis.call('set', valueName, rate)
  redis.call('zadd', permitsName, now, struct.pack('Bc0I', string.len(A.random), A.random, cost))
  redis.call('decrby', valueName, cost)
end
keep_alive()
return reply
end, function(r) return r[1] == 1 and r[2] == 1 end)
