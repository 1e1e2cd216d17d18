-- Claims the schedule slot that the server's clock is in for one run of a job (exec
-- --once-per): slot start = floor((now - offset) / every) * every + offset. The slot is
-- taken while the newest record of the history is of a slot that has not ended; else this
-- run's record ("running") goes at its head. Idempotent: a repeat of the same run id (a
-- retry after a lost reply) is claimed again, and writes its record anew (so that a WAIT
-- behind it covers the first run's write).
-- @key runs       the run history (see run_history.lua)
-- @key lock       the lock hash: a "running" record whose owner no longer holds the lock
--                 ended unrecorded (its rlock died) and becomes "lost"
-- @arg run_id     this run's id
-- @arg every_ms   the slot length (ms, > 0)
-- @arg offset_ms  where slots start, after each multiple of every_ms since the epoch
-- @arg owner      the owner as the lock hash stores it
-- @arg host       the host name, for the record
-- Reply: {1, slot_start_ms, slot_end_ms} claimed;
--        {0, slot_start_ms, slot_end_ms, record} taken (record: the JSON of the run that
--        claimed it); error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include run_history.lua
local err = check_runs(K.runs) or first_denied({{'HEXISTS', K.lock, 'f'}})
if err then return err end
local now = server_time().ms
local every, offset = tonumber(A.every_ms), tonumber(A.offset_ms)
local slot_start = math.floor((now - offset) / every) * every + offset
local slot_end = slot_start + every
local fmt = function(n) return string.format('%.0f', n) end

local head_text = redis.call('LINDEX', K.runs, 0)
local head = head_text and run_record(head_text)
if head and head.id == A.run_id then
  redis.call('LSET', K.runs, 0, head_text)
  return {1, fmt(head.slot_start_ms), fmt(head.slot_end_ms)}
end
if head and tonumber(head.slot_end_ms) and head.slot_end_ms > now then
  return {0, fmt(head.slot_start_ms), fmt(head.slot_end_ms), head_text}
end
if head and head.status == 'running' then
  if type(head.owner) ~= 'string' or redis.call('HEXISTS', K.lock, head.owner) == 0 then
    end_run(K.runs, head.id, 'lost', nil)
  end
end
redis.call('LPUSH', K.runs, cjson.encode({id = A.run_id, host = A.host, owner = A.owner,
  slot_start_ms = slot_start, slot_ms = every, slot_end_ms = slot_end, started_ms = now,
  ended_ms = cjson.null, status = 'running', exit_code = cjson.null}))
redis.call('LTRIM', K.runs, 0, RUNS_KEPT - 1)
return {1, fmt(slot_start), fmt(slot_end)}
