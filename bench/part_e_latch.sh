# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part E, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# Each round: a latch of count 1, one `rlock latch await` blocked on it (its
# shell runs stamp > start as soon as rlock exits 0), then the last
# count-down. The reference is the time the server received that count-down,
# as redis-cli MONITOR prints it (the server's CLOCK_REALTIME, the same clock
# as stamp's on this host): the zero is published while that request runs.
# The count-down is the second script of the round naming the latch channel
# (set is the first; await's reads do not name it).
AWAIT_SH='"$1" -q latch await "$2" --wait 30s && exec "$3"'
latch_subscribed() { subscribed "rlock:chan:{$1}:latch"; }

# latch_wake: LATCH_ROUNDS rounds; prints "ok median p90 worst notes".
# Runs in the current shell (see handoff).
latch_wake() {
    local i r wp ws cs mp errs=0 unblocked=0 name start
    local -a rounds=()
    stdbuf -oL redis-cli -h 127.0.0.1 -p "$REDIS_PORT" monitor >"$TMP/monitor" 2>>"$LOG" &
    mp=$!
    until_true 10 grep -qs OK "$TMP/monitor"
    for ((i = 1; i <= LATCH_ROUNDS; i++)); do
        r=$TMP/e-$i name=bench-e-$i
        mkdir "$r"
        if ! "$RLOCK" -q latch set "$name" 1 --force --expire 5m 2>>"$LOG"; then
            errs=$((errs + 1))
            continue
        fi
        setsid sh -c "$AWAIT_SH" sh "$RLOCK" "$name" "$STAMP" >"$r/start" 2>"$r/waiter.err" &
        wp=$!
        JOB_PIDS=("$wp")
        arm_guard "$wp" 40
        if until_true 10 latch_subscribed "$name"; then sleep 0.05; else sleep 0.2; fi
        if [[ -s $r/start ]] || ! alive "$wp"; then
            unblocked=$((unblocked + 1)) # released before the count reached zero, or died
        fi
        "$RLOCK" -q latch count-down "$name" 2>>"$LOG"
        cs=$?
        await_pid "$wp"
        ws=$?
        JOB_PIDS=()
        start=$(head -n1 "$r/start" 2>/dev/null)
        if ((cs != 0 || ws != 0)) || [[ ! $start =~ ^[0-9]+$ ]]; then
            errs=$((errs + 1))
            { printf 'latch round %d: count-down exit %d, waiter exit %d\n' "$i" "$cs" "$ws"; cat "$r/waiter.err"; } >>"$LOG"
            continue
        fi
        rounds+=("$name=$start")
        rm -rf "$r"
    done
    sleep 0.2 # let MONITOR's last lines arrive
    kill "$mp" 2>/dev/null
    wait "$mp" 2>/dev/null
    python3 - "$TMP/monitor" "$errs" "$unblocked" "${rounds[@]}" <<'EOF'
import statistics, sys
monitor, errs, unblocked = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = open(monitor, errors="replace").read().splitlines()
ms = []
for arg in sys.argv[4:]:
    name, start = arg.split("=")
    chan = '"rlock:chan:{%s}:latch"' % name
    seen = [l for l in lines if chan in l and ('"EVALSHA"' in l or '"EVAL"' in l)]
    if len(seen) < 2:
        errs += 1
        continue
    received_ns = int(seen[1].split()[0].replace(".", "")) * 1000  # s.us -> ns
    ms.append((int(start) - received_ns) / 1e6)
ms.sort()
notes = []
if errs: notes.append(f"{errs} failed rounds")
if unblocked: notes.append(f"{unblocked} waiters not blocked")
note = ", ".join(notes) or "-"
if not ms:
    print(0, "", "", "", note)
else:
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    print(len(ms), "%.2f" % statistics.median(ms), "%.2f" % p90, "%.2f" % ms[-1], note)
EOF
}

log "E: latch await wake-up, $LATCH_ROUNDS rounds"
say "## E. Latch wake-up: last count-down received -> blocked \`latch await\` has exited"
say ""
say "$LATCH_ROUNDS rounds; ms from the moment the server received the last"
say "\`rlock latch count-down\` (redis-cli MONITOR's timestamp, same host clock) to the"
say "\`stamp\` run as soon as \`rlock latch await --wait 30s\` exited 0: the count-down"
say "script, the pub/sub wake-up, one read of the count, rlock's exit."
say ""
say "| rounds | median | p90 | worst | notes |"
say "|---:|---:|---:|---:|---|"
latch_wake >"$TMP/latch"
read -r LW_OK LW_MED LW_P90 LW_MAX LW_NOTE <"$TMP/latch"
say "| $LW_OK | $LW_MED | $LW_P90 | $LW_MAX | $LW_NOTE |"
say ""
