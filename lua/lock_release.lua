-- Releases one level of a reentrant lock (KEYS: see lock_common.lua, then reply). At level
-- 0 the lock goes to the longest-waiting live waiter (see grant in lock_common.lua) or is
-- announced free.
-- @arg owner            the owner
-- @arg channel          lock channel
-- @arg hold_id          id of the exec hold to release ("" for a plain unlock)
-- @arg claim_ms         claim ms
-- @arg foreign_channel  Redisson's lock channel or "" (see foreign_channel in lock_common.lua)
-- @arg floor            the least token to hand the next waiter: "" but on a quorum, which
--                       fills it (see fence_floor in lock_common.lua). These six come first
--                       and in this order in lock_release, lock_abandon and lock_return: the
--                       quorum's rule "release" (prim/lock_quorum.cpp) reads the floor by
--                       name, and a static_assert keeps it in one place
-- @arg keep_ms          keep ms at level 0 (--min-hold; 0 = none)
-- @arg kind             the hold's kind: "lock" or "exec" (exclusive), "slock" or "sexec"
--                       (shared)
-- @arg reply_ttl        ms the reply record is kept
-- @arg [run_end]        the end of an exec --once-per run to record in KEYS runs: "<run id>
--                       exited <exit code>" ("lost" instead when the hold is gone); "" or
--                       left out for none
-- Reply: {1, remaining_count} released (0: released, handed over or kept);
--        {0, owner1, count1, ...} the owner does not hold it (empty after 0: it is free);
--        {-2, owner1, count1, ...} refused: the last level belongs to a running exec;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- On a quorum (prim/lock_quorum.cpp):
-- @quorum release
-- @include common.lua
-- @include waiter_queue.lua
-- @include lock_common.lua
-- @include run_history.lua
-- @key reply  this request's reply record (see once in common.lua): a repeat of the same
--             request (a retry after a lost reply) gets the first run's reply and changes
--             nothing
-- @key [runs] the run history that ARGV run_end ends a run of (see run_history.lua)
local function release()
local owner, channel, rid, claim_ms = A.owner, A.channel, A.hold_id, A.claim_ms
local keep = tonumber(A.keep_ms)
local count = tonumber(redis.call('HGET', K.lock, owner) or '-1')
local exec_hold = redis.call('GET', K.exec)
local now_ms = server_time().ms
purge_readers(now_ms)

if is_shared(A.kind) then
  local left = release_shared(reader_id(A.kind, owner, rid), now_ms, channel, claim_ms)
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
end

return once(K.reply, A.reply_ttl, function()
  local err = check_lock_keys(A.channel) or (K.runs and check_runs(K.runs))
  if err then return err end
  local reply = release()
  if type(reply) == 'table' and not reply.err then apply_run_end(K.runs, A.run_end, reply[1] == 1) end
  return reply
end, function(r) return r[1] == 1 end)
