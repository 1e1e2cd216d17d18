-- Gives back the hold a request took, if any, and nothing else (a quorum's grant that fell
-- short of a majority; KEYS: see lock_common.lua): the request stays queued, a grant not
-- yet claimed stays its own, a hold it claimed becomes its reservation again, and its next
-- attempt may take it again.
-- @arg owner            the owner
-- @arg channel          lock channel
-- @arg hold_id          the request (wait) id
-- @arg claim_ms         claim ms
-- @arg foreign_channel  Redisson's lock channel or "" (see foreign_channel in lock_common.lua)
-- @arg floor            the least token to hand the next waiter: "" but on a quorum, which
--                       fills it (see fence_floor in lock_common.lua). These six come first
--                       and in this order in lock_release, lock_abandon and lock_return: the
--                       quorum's rule "release" (prim/lock_quorum.cpp) reads the floor by
--                       name, and a static_assert keeps it in one place
-- @arg member           the request's waiters member
-- Reply: {1, n} with n = 1 when something was given back;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- On a quorum (prim/lock_quorum.cpp):
-- @quorum release
-- @include common.lua
-- @include waiter_queue.lua
-- @include lock_common.lua
local err = check_lock_keys(A.channel)
if err then return err end
local owner, channel, rid, claim_ms = A.owner, A.channel, A.hold_id, A.claim_ms
local count = tonumber(redis.call('HGET', K.lock, owner) or '-1')
local exec_hold = redis.call('GET', K.exec)
local now_ms = server_time().ms
purge_readers(now_ms)

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
  if release_shared(id, now_ms, channel, claim_ms) then return {1, 1} end
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
