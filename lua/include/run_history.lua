-- A name's run history (exec --once-per), spliced in where a script says @include: a list,
-- newest first, of at most RUNS_KEPT JSON records {id, host, owner, slot_start_ms, slot_ms,
-- slot_end_ms, started_ms, ended_ms, status, exit_code}, status "running", "exited" (with
-- exit_code), "lost" (the hold ended without the job's end: exit_code when the job ended
-- after it was lost, else null) or "skipped" (the slot was claimed, the lock was busy).
-- No TTL: the history outlives the lock.
local RUNS_KEPT = 100

-- An error reply when the runs key holds another type or the caller may not read and write
-- it; nil otherwise.
local function check_runs(runs)
  local denied = first_denied({{'LPUSH', runs, 'r'}, {'LSET', runs, '0', 'r'}, {'LTRIM', runs, '0', '1'},
    {'LINDEX', runs, '0'}, {'LPOP', runs},
    {'LRANGE', runs, '0', '1'}, {'TYPE', runs}, {'TIME'}})
  if denied then return denied end
  return bad_type(runs, 'list')
end

-- Decodes one stored record; nil for one that is not rlock's (left as it is).
local function run_record(text)
  local ok, r = pcall(cjson.decode, text)
  if ok and type(r) == 'table' and type(r.id) == 'string' then return r end
  return nil
end

-- Ends the record `id` ("running" only: a repeat changes nothing) as `status`, with
-- `exit_code` (a number or nil) and the server's time as its end.
local function end_run(runs, id, status, exit_code)
  local all = redis.call('LRANGE', runs, 0, RUNS_KEPT - 1)
  for i, text in ipairs(all) do
    local r = run_record(text)
    if r and r.id == id then
      if r.status ~= 'running' then return end
      r.status = status
      r.exit_code = exit_code or cjson.null
      r.ended_ms = server_time().ms
      redis.call('LSET', runs, i - 1, cjson.encode(r))
      return
    end
  end
end

-- Takes the claim of the run `id` back (its job never started: an error, a signal): its
-- record goes while it is still the newest and "running", so the slot is free again; one
-- that a later claim covered is ended as "skipped" instead.
local function unclaim(runs, id)
  local head = run_record(redis.call('LINDEX', runs, 0) or '')
  if head and head.id == id and head.status == 'running' then
    redis.call('LPOP', runs)
    return
  end
  end_run(runs, id, 'skipped', nil)
end

-- `run_end`, "<run id> <status> [<exit code>]" (nil or "" for none), applied to `runs`:
-- status "exited" stays so when `released`, else it is "lost" (the hold was gone at the
-- release).
local function apply_run_end(runs, run_end, released)
  local id, status, code = string.match(run_end or '', '^(%S+) (%a+) ?(%-?%d*)$')
  if not id or not runs then return end
  if status == 'exited' and not released then status = 'lost' end
  if status == 'unclaimed' then return unclaim(runs, id) end
  end_run(runs, id, status, tonumber(code))
end
