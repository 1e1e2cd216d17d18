-- Read-only, for inspect: how many scheduled items are due by the server's clock (a plain
-- read cannot name "now", and counting the listed items alone stops at the listing's
-- bound), and the leases of the first `limit` items in flight (bounded, where HGETALL
-- would read every lease).
-- @key scheduled  scheduled zset (these as in queue_common.lua)
-- @key in_flight  in-flight zset
-- @key leases     leases hash
-- @arg limit      most leases read
-- Reply: {due count, {id, "<token> <consumer>" ("" when missing), ...}}.
-- @include common.lua
-- Read-only: a refusal names the command instead of a raw script error; HMGET only when
-- there are leases to read.
local denied = first_denied({{'TIME'}, {'ZCOUNT', K.scheduled, '0', '1'}, {'ZRANGE', K.in_flight, '0', '0'}})
if denied then return denied end
local due = redis.call('ZCOUNT', K.scheduled, '-inf', server_time().ms)
local ids = redis.call('ZRANGE', K.in_flight, 0, tonumber(A.limit) - 1)
local leases = {}
if #ids > 0 then
  denied = first_denied({{'HMGET', K.leases, 'f'}})
  if denied then return denied end
  local l = redis.call('HMGET', K.leases, unpack(ids))
  for i = 1, #ids do
    leases[#leases + 1] = ids[i]
    leases[#leases + 1] = l[i] or ''
  end
end
return {due, leases}
