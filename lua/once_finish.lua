-- Ends a run of the history (exec --once-per) that no lock release ended: "skipped" (the
-- lock was busy when its slot was claimed), "lost" (the hold was lost while the job ran) or
-- "exited" (the job ended and its release went unanswered), or takes its claim back,
-- "unclaimed" (no job started: an error or a signal came first; see unclaim).
-- Only a "running" record changes: a repeat changes nothing.
-- @key runs     the run history (see run_history.lua)
-- @arg run_end  "<run id> <status> [<exit code>]"
-- Reply: 1; error "BADTYPE <type> <key>" and no change otherwise.
-- @include common.lua
-- @include run_history.lua
local err = check_runs(K.runs)
if err then return err end
apply_run_end(K.runs, A.run_end, true)
return 1
