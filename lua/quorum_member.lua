-- Whether a quorum member's data may be younger than a lease it could have granted (a
-- restart without persistence): sent in the same write ahead of every request that takes
-- or renews something on a quorum (redis/quorum.cpp).
-- @key longest_lease  the longest lease any rlock asked this member for (ms, no TTL)
-- @key first_write    when rlock first wrote to this data set (server ms, no TTL: gone with
--                     the data)
-- @key started        the server's start as INFO gave it when rlock first found this key
--                     missing (server ms, no TTL)
-- The start is kept so that INFO, which formats a page of text, runs once a data set
-- and not on every request: every member runs this check with every acquisition, and INFO
-- was its costliest part. A restart that loses the data loses the start too, and the next
-- request measures it again. A restart that keeps the data (persistence) keeps the earlier
-- start, so the member looks as if its data began in that earlier run: it counts once that
-- start is longer ago than the longest lease (at once, unless the earlier run was short),
-- where its real start would have counted it at once. Later than need be, never sooner.
-- @arg lease          the lease this request asks for (ms)
-- Reply: {uptime_ms, first_write_ms, longest_lease_ms, now_ms}: the longest lease as it was
-- before this request (the longest a hold granted so far can have).
-- Every command below, checked against the caller's ACL first (Redis 7), so that a refusal
-- comes before this check writes and names what to grant (rlock(1), ACL): these keys are
-- outside every prefix, and INFO is not among the rights a single server needs.
local acl = redis.acl_check_cmd
if acl then
  local needs = {{'TIME'}, {'INFO', 'server'}}
  for _, key in ipairs({K.longest_lease, K.first_write, K.started}) do
    table.insert(needs, {'GET', key})
    table.insert(needs, {'SET', key, '0'})
  end
  for _, argv in ipairs(needs) do
    if not acl(unpack(argv)) then
      local on = argv[1] == 'INFO' and '' or (argv[2] and ' on ' .. argv[2] or '')
      return redis.error_reply('NOPERM rlock needs ' .. argv[1] .. on .. ' for the quorum restart rule')
    end
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- (GETs, not an MGET: the rights rlock(1) documents have no MGET.)
local kept = {redis.call('GET', K.longest_lease), redis.call('GET', K.first_write),
  redis.call('GET', K.started)}
-- Only digits are a value (not Lua's "1e3" or "0x10"): doctor reads these keys too, and
-- both must see the same figures.
local function ms(v)
  if v and string.match(v, '^%d+$') then return tonumber(v) end
end
local longest = ms(kept[1]) or 0
if tonumber(A.lease) > longest then redis.call('SET', K.longest_lease, A.lease) end
if not kept[2] then redis.call('SET', K.first_write, string.format('%.0f', now)) end
local since = ms(kept[2]) or now
local started = ms(kept[3])
if not started then
  local uptime = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)')) or 0
  started = now - uptime * 1000
  if not kept[3] then redis.call('SET', K.started, string.format('%.0f', started)) end
end
return {math.max(now - started, 0), since, longest, now}
