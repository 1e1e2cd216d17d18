-- Read-only, for inspect: how many scheduled items are due by the server's clock (a plain
-- read cannot name "now", and counting the listed items alone stops at the listing's
-- bound), and the leases of the first ARGV[1] items in flight (bounded, where HGETALL
-- would read every lease).
-- KEYS[1] scheduled zset, KEYS[2] in-flight zset, KEYS[3] leases hash.
-- ARGV[1] most leases read.
-- Reply: {due count, {id, "<token> <consumer>" ("" when missing), ...}}.
-- @include common.lua
-- Read-only: a refusal names the command instead of a raw script error; HMGET only when
-- there are leases to read.
local denied = first_denied({{'TIME'}, {'ZCOUNT', KEYS[1], '0', '1'}, {'ZRANGE', KEYS[2], '0', '0'}})
if denied then return denied end
local due = redis.call('ZCOUNT', KEYS[1], '-inf', server_time().ms)
local ids = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)
local leases = {}
if #ids > 0 then
  denied = first_denied({{'HMGET', KEYS[3], 'f'}})
  if denied then return denied end
  local l = redis.call('HMGET', KEYS[3], unpack(ids))
  for i = 1, #ids do
    leases[#leases + 1] = ids[i]
    leases[#leases + 1] = l[i] or ''
  end
end
return {due, leases}
