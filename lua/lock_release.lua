-- Releases one level of a reentrant lock (KEYS: see lock_common.lua, then reply), or cleans
-- up after a request that gave up without knowing whether it was executed. At level 0 the
-- lock goes to the longest-waiting live waiter (see grant in lock_common.lua) or is
-- announced free.
-- @arg owner            the owner
-- @arg channel          lock channel
-- @arg keep_ms          keep ms at level 0 (--min-hold; 0 = none)
-- @arg hold_id          id of the exec hold to release ("" for a plain unlock)
-- @arg claim_ms         claim ms
-- @arg op               "release", "abandon" or "return"
-- @arg member           for "abandon" and "return": the request's waiters member
-- @arg kind             the hold's kind: "lock" or "exec" (exclusive), "slock" or "sexec"
--                       (shared)
-- @arg reply_ttl        ms the reply record is kept
-- @arg foreign_channel  Redisson's lock channel or "" (see foreign_channel in lock_common.lua)
-- @arg [floor]          the least token to hand the next waiter, or "" (a quorum's: see
--                       fence_floor in lock_common.lua)
-- "abandon" gives back what the request hold_id took (a hold, or a grant not yet claimed),
-- leaves the queue, and marks the request given up, so that it changes nothing if the
-- server runs it only now. "return" (a quorum's grant that fell short of a majority) gives
-- back the hold the request hold_id took, if any, and nothing else: the request stays
-- queued, a grant not yet claimed stays its own, a hold it claimed becomes its
-- reservation again, and its next attempt may take it again.
-- Reply: {1, remaining_count} released (0: released, handed over or kept);
--        {0, owner1, count1, ...} the owner does not hold it (empty after 0: it is free);
--        {-2, owner1, count1, ...} refused: the last level belongs to a running exec;
--        for "abandon": {1, n} with n = 1 when something was given back;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- On a quorum (redis/quorum_rule.hpp):
-- @quorum release
-- @include common.lua
-- @include waiter_queue.lua
-- @include lock_common.lua
-- @key [reply]  this request's reply record (see once in common.lua): a repeat of the same
--               request (a retry after a lost reply) gets the first run's reply and changes
--               nothing; "abandon" and "return" go without one
return once(K.reply, A.reply_ttl, function()
local err = check_lock_keys(A.channel)
if err then return err end
local owner, channel, keep, rid, claim_ms = A.owner, A.channel, tonumber(A.keep_ms), A.hold_id, A.claim_ms
local count = tonumber(redis.call('HGET', K.lock, owner) or '-1')
local exec_hold = redis.call('GET', K.exec)
local now_ms = server_time().ms
purge_readers(now_ms)

-- Drops one level of the shared hold `id`; at its last level the lock may be free for the
-- next waiters. Returns the levels left, or nil when there is no such hold.
local function release_shared(id)
  local c, expiry = reader_live(id, now_ms)
  if not c then return nil end
  if c > 1 then
    reader_set(id, c - 1, expiry, now_ms)
    return c - 1
  end
  reader_del(id)
  pass_on(channel, claim_ms)
  return 0
end

if A.op == 'return' then
  local _, kind = parse_member(A.member)
  if redis.call('GET', K.request) ~= '1' then return {1, 0} end
  remember('r')
  -- The hold this request took becomes its reservation again (as the grant left it, for a
  -- claim window): its next attempt claims it here. Handed on instead, the lock would go to
  -- the waiter behind it on this member while the others still grant this one, and the
  -- order of the queue would differ from member to member.
  if is_shared(kind) then
    local id = reader_id(kind, owner, rid)
    if reader_live(id, now_ms) == 1 then
      reader_set(id, 1, now_ms + claim_ms, now_ms)
      redis.call('HSET', K.reader_grants, A.member, string.format('%.0f', now_ms + claim_ms))
      extend(K.reader_grants, claim_ms)
      return {1, 1}
    end
    if release_shared(id) then return {1, 1} end
    return {1, 0}
  end
  if count < 1 or (kind == 'exec' and exec_hold ~= rid) then return {1, 0} end
  if count == 1 then
    redis.call('PEXPIRE', K.lock, claim_ms)
    if kind == 'exec' then redis.call('SET', K.exec, rid, 'PX', claim_ms) end
    redis.call('SET', K.grant, A.member, 'PX', claim_ms)
    return {1, 1}
  end
  if exec_hold == rid then redis.call('DEL', K.exec) end
  release_level(owner, count, 0, channel, claim_ms)
  return {1, 1}
end

if A.op == 'abandon' then
  local member = A.member
  local _, kind = parse_member(member)
  if is_shared(kind) then
    local id = reader_id(kind, owner, rid)
    local took = redis.call('GET', K.request) == '1' or redis.call('HDEL', K.reader_grants, member) == 1
    leave_queue(member)
    remember('0')
    if took and release_shared(id) then return {1, 1} end
    return {1, 0}
  end
  local took = redis.call('GET', K.request) == '1' and (kind ~= 'exec' or exec_hold == rid)
  if redis.call('GET', K.grant) == member then
    redis.call('DEL', K.grant)
    took = true
  end
  leave_queue(member)
  remember('0')
  if not took or count < 1 then return {1, 0} end
  if exec_hold == rid then redis.call('DEL', K.exec) end
  release_level(owner, count, 0, channel, claim_ms)
  return {1, 1}
end

if is_shared(A.kind) then
  local left = release_shared(reader_id(A.kind, owner, rid))
  if left then
    if rid ~= '' then remember('0') end
    return {1, left}
  end
  if rid ~= '' and redis.call('GET', K.request) == '0' then return {1, 0} end  -- a retry
  return holders_reply({0})
end

if rid ~= '' and exec_hold ~= rid then
  -- Released already by this same hold (a retry after a lost reply), or lost.
  if redis.call('GET', K.request) == '0' then return {1, 0} end
  return holders_reply({0})
end
if count < 0 then return holders_reply({0}) end
if rid == '' and exec_hold and count == 1 then return holders_reply({-2}) end
if rid ~= '' then
  redis.call('DEL', K.exec)
  remember('0')
end
return {1, release_level(owner, count, keep, channel, claim_ms)}
end, function(r) return r[1] == 1 end)
