-- Reads a latch (KEYS: see latch_common.lua) without changing it, at a cost bounded by the
-- page whatever the number of ids.
-- @arg with_ids  '1' to include a page of the ids counted, '0' for the count alone
-- @arg cursor    the SSCAN cursor of the page ('0': the first)
-- @arg limit     about how many ids a page lists (the server's cursor steps may add a few)
-- @arg [redisson] unused: reading is the same for Redisson's latch
-- Reply: {0} no such latch;
--        {1, count, ttl_ms (-1 = no expiry), ids_total, next_cursor ('0': no more), id1, ...}
--        (ids only when asked);
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" when the keys are not a latch.
-- @include common.lua
-- @include latch_common.lua
local err, count = check_latch_keys(nil)
if err then return err end
if not count then return {0} end
local reply = {1, count, redis.call('PTTL', K.count), redis.call('SCARD', K.ids), '0'}
if A.with_ids == '1' then
  local cursor, want = A.cursor, tonumber(A.limit)
  -- A few steps at most: a sparse set may give fewer ids than asked for in one step.
  for _ = 1, 8 do
    local step = redis.call('SSCAN', K.ids, cursor, 'COUNT', want - (#reply - 5))
    cursor = step[1]
    for _, id in ipairs(step[2]) do reply[#reply + 1] = id end
    if cursor == '0' or #reply - 5 >= want then break end
  end
  reply[5] = cursor
end
return reply
