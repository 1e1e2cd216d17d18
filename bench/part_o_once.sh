# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part O, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# exec --once-per beside a plain exec: the time of a run, and the requests each sends
# (MONITOR, the lines a client sent, not those its scripts ran). Every --once-per run
# claims a slot of its own: the untimed --prepare deletes the name's run history first.
log "O: exec --once-per beside exec"
PREP["o_once"]="redis-cli -h 127.0.0.1 -p $REDIS_PORT DEL rlock:runs:{bench-o-once}"
PREP["o_plain"]="redis-cli -h 127.0.0.1 -p $REDIS_PORT DEL rlock:runs:{bench-o-plain}"
bench_interleaved o_plain "$RL exec bench-o-plain -- true" \
    o_once "$RL exec --once-per 1d bench-o-once -- true"

# requests_per_run ARGS...: the commands `rlock ARGS` sends per run, over O_RUNS runs, each
# in a slot of its own.
O_RUNS=20
requests_per_run() {
    local mon=$TMP/o_monitor.txt
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" MONITOR >"$mon" &
    local mpid=$!
    until_true 5 grep -q OK "$mon"
    rcli ECHO o-start >/dev/null
    for ((i = 0; i < O_RUNS; i++)); do
        rcli DEL "rlock:runs:{bench-o-count}" >/dev/null
        "$RLOCK" "$@" >/dev/null 2>&1
    done
    rcli ECHO o-end >/dev/null
    until_true 5 grep -q '"o-end"' "$mon"
    kill "$mpid" 2>/dev/null
    wait "$mpid" 2>/dev/null
    # Between the markers: what the rlock processes sent (not the DELs, not their scripts').
    python3 - "$mon" "$O_RUNS" <<'PY'
import re, sys
lines, on, n = open(sys.argv[1], errors="replace").read().splitlines(), False, 0
for line in lines:
    if '"o-start"' in line: on = True; continue
    if '"o-end"' in line: break
    if not on or "[0 lua]" in line or re.search(r'"(DEL|del)" "rlock:runs:', line): continue
    n += 1
print("%.1f" % (n / int(sys.argv[2])))
PY
}
O_REQ_PLAIN=$(requests_per_run exec bench-o-count -- true)
O_REQ_ONCE=$(requests_per_run exec --once-per 1d bench-o-count -- true)

say "## O. exec --once-per beside exec (one process per run)"
say ""
say "| command | median | mean ± σ | min | max | vs exec |"
say "|---|---:|---:|---:|---:|---:|"
row "rlock exec NAME -- true" o_plain o_plain
row "rlock exec --once-per 1d NAME -- true" o_once o_plain
say ""
say "Requests a run sends (MONITOR, over $O_RUNS runs, scripts' own commands left out):"
say "exec $O_REQ_PLAIN, exec --once-per $O_REQ_ONCE (the slot's claim; its end goes with the release)."
say ""
