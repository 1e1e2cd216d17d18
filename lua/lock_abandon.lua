-- Cleans up after a request that gave up without knowing whether it was executed (KEYS:
-- see lock_common.lua): gives back what the request took (a hold, or a grant not yet
-- claimed), leaves the queue, and marks the request given up, so that it changes nothing
-- if the server runs it only now. A hold given back goes to the longest-waiting live
-- waiter (see grant in lock_common.lua) or is announced free.
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

local member = A.member
local _, kind = parse_member(member)
if is_shared(kind) then
  local id = reader_id(kind, owner, rid)
  local took = redis.call('GET', K.request) == '1' or redis.call('HDEL', K.reader_grants, member) == 1
  leave_queue(member)
  remember('0')
  if took and release_shared(id, now_ms, channel, claim_ms) then return {1, 1} end
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
