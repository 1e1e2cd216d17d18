-- Extends the lease of a hold if, and only if, it is still held: by ARGV[1], and for an
-- exec hold (ARGV[3] non-empty) by that very exec; a shared hold (ARGV[4] = its reader id)
-- by its own reader entry. Never shortens an expiry.
-- KEYS[1] lock hash, KEYS[2] exec hold id, KEYS[3] readers, KEYS[4] reader expiries (see
-- lock_common.lua)
-- ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] exec hold id or "", ARGV[4] reader id or ""
-- Reply: the hold's remaining lease in ms (> 0) when renewed; 0 when the hold is gone
--        (expired, deleted, forced, or the keys now hold other types).
-- On a quorum (redis/quorum_rule.hpp):
-- @quorum renew
-- @include common.lua
local denied = first_denied({{'PEXPIRE', KEYS[1], '1'}, {'SET', KEYS[2], '1'}, {'HSET', KEYS[3], 'f', '1'},
  {'ZADD', KEYS[4], '1', 'm'}, {'PEXPIRE', KEYS[4], '1'}}) or first_denied({{'TIME'}, {'TYPE', KEYS[1]},
  {'HEXISTS', KEYS[1], 'f'}, {'GET', KEYS[2]}, {'HGET', KEYS[3], 'f'}, {'PTTL', KEYS[1]}})
if denied then return denied end
local lease = tonumber(ARGV[2])
if ARGV[4] ~= '' then
  if redis.call('TYPE', KEYS[3])['ok'] ~= 'hash' then return 0 end
  local t4 = redis.call('TYPE', KEYS[4])['ok']
  if t4 ~= 'zset' and t4 ~= 'none' then return 0 end
  local v = redis.call('HGET', KEYS[3], ARGV[4])
  local c, e = string.match(v or '', '^(%d+):(%d+)$')
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if not c or tonumber(e) <= now_ms then return 0 end
  local expiry = math.max(tonumber(e), now_ms + lease)
  redis.call('HSET', KEYS[3], ARGV[4], c .. ':' .. string.format('%.0f', expiry))
  redis.call('ZADD', KEYS[4], string.format('%.0f', expiry), ARGV[4])
  for _, k in ipairs({KEYS[3], KEYS[4]}) do
    if redis.call('PTTL', k) < expiry - now_ms then redis.call('PEXPIRE', k, expiry - now_ms) end
  end
  return expiry - now_ms
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
if ARGV[3] ~= '' then
  if redis.call('TYPE', KEYS[2])['ok'] ~= 'string' then return 0 end
  if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 0 end
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
end
return extend(KEYS[1], lease)
