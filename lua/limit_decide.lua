-- One rate-limiter decision (GCRA: a theoretical arrival time, TAT, per bucket), on the
-- server clock, in microseconds.
-- @key limiter      (hash: rate, per_ms, burst, per_client '0'|'1', client_rate ('0': none),
--                   tat = the overall bucket's TAT, absent while it is full or unused)
-- @key clients      (zset: client id -> that client's TAT)
-- @key [reply]      this request's reply record (see once in common.lua), absent for a
--                   peek: a repeated decision returns the first one and consumes nothing more
-- @arg rate
-- @arg per_ms
-- @arg burst
-- @arg per_client   '0'|'1'
-- @arg client_rate  ('0': none)
-- @arg cost         (1..burst)
-- @arg client       client id ('' for none)
-- @arg peek         '1' to peek (decide without consuming or writing anything)
-- @arg reconfigure  '1' to store the config (rate .. client_rate) over a different stored
--                   one (--reconfigure)
-- @arg reply_ttl    ms the reply record is kept
-- Reply: {1, allowed 0|1, remaining, retry_after_us, reset_after_us, now_us}; with a peek,
--        reset_after_us is that of the state as it is (the peeked call not consumed)
--        {0, rate, per_ms, burst, per_client, client_rate}: another config is stored;
--        nothing changed. Errors "BADTYPE <type> <key>" / "MALFORMED <key>" / NOPERM.
--
-- Buckets: the overall one (a hash field) unless the limiter is per client only; a
-- client's (a zset member) when per_client is '1', at client_rate, or at rate when no
-- client_rate is set. One decision consumes from every bucket it uses, or from none.
-- Per-client buckets are a zset rather than hash fields: Redis 7.0 has no expiry per hash
-- field, and ordered by TAT the full (stale) buckets are the lowest scores, so each write
-- drops them with one ZREMRANGEBYSCORE (O(log n + removed)) and the largest score says
-- when everything is full again, which is when both keys expire. A decision that stores a
-- new config (--reconfigure) converts every live client bucket: O(clients), once per change.
-- @include common.lua
return once(A.peek ~= '1' and K.reply, A.reply_ttl, function()
-- Allows for the rounding of doubles (a quarter of a microsecond near 2^51).
local EPS = 1

do
  local denied = A.peek ~= '1' and first_denied({
    {'HSET', K.limiter, 'f', '1'}, {'HDEL', K.limiter, 'f'}, {'PEXPIRE', K.limiter, '1'},
    {'DEL', K.limiter}, {'ZADD', K.clients, '1', 'm'}, {'ZREMRANGEBYSCORE', K.clients, '0', '1'},
    {'PEXPIRE', K.clients, '1'}, {'DEL', K.clients},
  }) or first_denied({
    {'TIME'}, {'TYPE', K.limiter}, {'EXISTS', K.limiter}, {'HMGET', K.limiter, 'f'}, {'HGET', K.limiter, 'f'},
    {'ZRANGE', K.clients, '0', '0'}, {'ZSCORE', K.clients, 'm'}, {'ZCARD', K.clients},
  })
  if denied then return denied end
end
local err = first_bad_type({{K.limiter, 'hash'}, {K.clients, 'zset'}})
if err then return err end

-- A finite number (tonumber also takes "nan" and "inf", which no TAT may be).
local function finite(s)
  local v = tonumber(s)
  if v and v == v and v > -math.huge and v < math.huge then return v end
end

local stored = redis.call('HMGET', K.limiter, 'rate', 'per_ms', 'burst', 'per_client',
                          'client_rate', 'tat')
local exists = redis.call('EXISTS', K.limiter) == 1
if exists then
  -- Whole numbers of at most 15 digits (exact in doubles); rate, per and burst >= 1.
  for i = 1, 5 do
    if not stored[i] or not string.match(stored[i], '^%d+$') or #stored[i] > 15
        or (i <= 3 and tonumber(stored[i]) < 1) then
      return redis.error_reply('MALFORMED ' .. K.limiter)
    end
  end
  if stored[4] ~= '0' and stored[4] ~= '1' then return redis.error_reply('MALFORMED ' .. K.limiter) end
  if stored[6] and not finite(stored[6]) then return redis.error_reply('MALFORMED ' .. K.limiter) end
end
-- The largest client TAT decides the expiry: an infinite one (no rlock writes it) is refused.
local top = redis.call('ZRANGE', K.clients, -1, -1, 'WITHSCORES')
if top[2] and not finite(top[2]) then return redis.error_reply('MALFORMED ' .. K.clients) end

local now = server_time().us
local rate, per_us, burst = tonumber(A.rate), tonumber(A.per_ms) * 1000, tonumber(A.burst)
local per_client, client_rate = A.per_client == '1', tonumber(A.client_rate)
local cost, client, peek = tonumber(A.cost), A.client, A.peek == '1'
local uses_overall = not per_client or client_rate > 0

local differs = false
if exists then
  local given = {A.rate, A.per_ms, A.burst, A.per_client, A.client_rate}
  for i = 1, 5 do differs = differs or stored[i] ~= given[i] end
end
if differs and A.reconfigure ~= '1' then
  return {0, tonumber(stored[1]), tonumber(stored[2]), tonumber(stored[3]),
          tonumber(stored[4]), tonumber(stored[5])}
end

-- A bucket's TAT (nil: full) under the stored config whose burst lasts old_dvt, as the TAT
-- that uses the same fraction of the burst under the new config (new_dvt): a new config
-- neither hands out a burst of free tokens nor locks callers out.
local function rescale(t, old_dvt, new_dvt)
  if not t or t <= now then return nil end
  return now + math.min(t - now, old_dvt) / old_dvt * new_dvt
end

-- The emission intervals (us) of the overall bucket and of a client's, for config c.
local function intervals(c_rate, c_per_ms, c_client_rate)
  local per = c_per_ms * 1000
  return per / c_rate, per / (c_client_rate > 0 and c_client_rate or c_rate)
end

local tat = exists and finite(stored[6]) or nil
if differs then
  local old_t, old_ct = intervals(tonumber(stored[1]), tonumber(stored[2]), tonumber(stored[5]))
  local new_t, new_ct = intervals(rate, per_us / 1000, client_rate)
  local old_b = tonumber(stored[3])
  tat = rescale(tat, old_t * old_b, new_t * burst)
  -- Every live client bucket too (one pass over them; a reconfigure is rare). When the
  -- clients' buckets are dropped (no more --client), the write below deletes them.
  if per_client and stored[4] == '1' then
    local live = redis.call('ZRANGE', K.clients, 0, -1, 'WITHSCORES')
    for i = 1, #live, 2 do
      local t = rescale(tonumber(live[i + 1]), old_ct * old_b, new_ct * burst)
      if t then redis.call('ZADD', K.clients, string.format('%.17g', t), live[i]) end
    end
  end
end

-- The decision of one bucket (emission interval t, burst b) whose TAT is `tat` (nil: full).
-- A TAT beyond now + t*b (written before the server clock went back) is capped there: the
-- wait never exceeds what the config in force allows.
local function decide(tat, t)
  local dvt = t * burst
  tat = math.min(math.max(tat or now, now), now + dvt)
  local new_tat = tat + t * cost
  local allow_at = new_tat - dvt
  -- Calls of cost 1 that pass now; after this one, when it passes and is not a peek.
  local left = math.floor((now - (tat - dvt)) / t + 1e-9)
  if allow_at <= now + EPS then
    if not peek then left = math.floor((now - allow_at) / t + 1e-9) end
    return {ok = true, tat = new_tat, held = tat, remaining = left, retry = 0}
  end
  return {ok = false, tat = tat, held = tat, remaining = left, retry = allow_at - now}
end

local outcomes = {}
local overall, mine
if uses_overall then
  overall = decide(tat, per_us / rate)
  outcomes[#outcomes + 1] = overall
end
if per_client then
  local score = redis.call('ZSCORE', K.clients, client)
  mine = decide(score and tonumber(score), per_us / (client_rate > 0 and client_rate or rate))
  outcomes[#outcomes + 1] = mine
end
local allowed, remaining, retry, reset = true, burst, 0, 0
for _, o in ipairs(outcomes) do
  allowed = allowed and o.ok
  remaining = math.min(remaining, math.max(o.remaining, 0))
  retry = math.max(retry, o.retry)
end
-- Limited or a peek: nothing is consumed, so each bucket is full again when its TAT
-- before the decision comes (as go-redis/redis_rate reports a call of cost 0).
local consumed = allowed and not peek
for _, o in ipairs(outcomes) do
  reset = math.max(reset, (consumed and o.tat or o.held) - now)
end
local reply = {1, allowed and 1 or 0, remaining, math.ceil(retry), math.ceil(reset), now}
if peek or (not allowed and not differs) then return reply end

-- A write: the decision consumed, or a new config is stored (also when limited).
redis.call('HSET', K.limiter, 'rate', A.rate, 'per_ms', A.per_ms, 'burst', A.burst,
           'per_client', A.per_client, 'client_rate', A.client_rate)
if uses_overall then
  local t = allowed and overall.tat or tat
  if t and t > now then
    redis.call('HSET', K.limiter, 'tat', string.format('%.17g', t))
  else
    redis.call('HDEL', K.limiter, 'tat')
  end
else
  redis.call('HDEL', K.limiter, 'tat')
end
if not per_client then
  redis.call('DEL', K.clients)
else
  redis.call('ZREMRANGEBYSCORE', K.clients, '-inf', string.format('%.17g', now))
  if allowed then redis.call('ZADD', K.clients, string.format('%.17g', mine.tat), client) end
end

-- Both keys live until every bucket is full again.
local last = tonumber(redis.call('HGET', K.limiter, 'tat') or now)
top = redis.call('ZRANGE', K.clients, -1, -1, 'WITHSCORES')
if top[2] then last = math.max(last, tonumber(top[2])) end
local ttl = math.ceil((last - now) / 1000)
if ttl < 1 then
  redis.call('DEL', K.limiter, K.clients)
else
  redis.call('PEXPIRE', K.limiter, ttl)
  if top[2] then redis.call('PEXPIRE', K.clients, ttl) end
end
return reply
end, function(r) return r[1] == 1 and r[2] == 1 end)
