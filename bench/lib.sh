# Helpers of bench/run.sh and its parts (sourced by run.sh after the servers are up):
# hyperfine wrappers, statistics, report rows. Uses OUT, LOG, REPORT, RLOCK, WARMUP, RUNS.
# Single-quoted '$1' etc. are meant for an inner sh.
# shellcheck shell=bash disable=SC2016,SC2034,SC2317

say() { printf '%s\n' "$*" | tee -a "$REPORT"; }
# until_true SECONDS CMD...: until CMD succeeds, at most SECONDS (parts C, E and H)
until_true() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.01
    done
}


q() { printf '%q' "$1"; } # quote a word for hyperfine's shell-word splitting
RL=$(q "$RLOCK")

HF_COMMON=(--style basic --time-unit millisecond)
if grep -qE -- '^[[:space:]]+-N\b|--shell=none' <<<"$(hyperfine --help 2>&1)"; then
    HF_COMMON+=(--shell=none)
    HF_MODE='no shell (-N)'
else
    HF_MODE='via shell (hyperfine subtracts the shell start-up)'
fi
HF_ARGS=(--warmup "$WARMUP" --runs "$RUNS" "${HF_COMMON[@]}")

# bench KEY CMD [PREPARE]: hyperfine one command, export bench/out/KEY.json.
bench() {
    local key=$1 cmd=$2 prep=${3:-}
    local -a extra=()
    [[ -n $prep ]] && extra=(--prepare "$prep")
    log "hyperfine: $cmd"
    {
        printf '\n### %s: %s\n' "$key" "$cmd"
        hyperfine "${HF_ARGS[@]}" "${extra[@]}" --export-json "$OUT/$key.json" "$cmd"
    } >>"$LOG" 2>&1 || { rm -f "$OUT/$key.json"; log "  failed, see $LOG"; }
}

# bench_interleaved KEY CMD [KEY CMD]...: hyperfine each command in PASSES passes of
# RUNS/PASSES runs, the commands taking turns, and export bench/out/KEY.json with the
# statistics of all runs of each (as bench() does). A VM's speed drifts from second to
# second: rows whose ratio is judged are measured in the same seconds, not one after the
# other (the first row of a run used to come out 5-10% slower than rows doing more work).
# PREP[KEY], when set, is an untimed --prepare command run before each run of KEY.
PASSES=4
declare -A PREP=()
bench_interleaved() {
    local pass key cmd i
    local -a pairs=("$@") extra
    for ((pass = 1; pass <= PASSES; pass++)); do
        for ((i = 0; i < ${#pairs[@]}; i += 2)); do
            key=${pairs[i]} cmd=${pairs[i + 1]} extra=()
            [[ -n ${PREP[$key]:-} ]] && extra=(--prepare "${PREP[$key]}")
            log "hyperfine (pass $pass/$PASSES): $cmd"
            {
                printf '\n### %s, pass %d: %s\n' "$key" "$pass" "$cmd"
                hyperfine "${HF_COMMON[@]}" --warmup "$((pass == 1 ? WARMUP : 3))" \
                    --runs "$(((RUNS + PASSES - 1) / PASSES))" "${extra[@]}" \
                    --export-json "$OUT/$key.pass$pass.json" "$cmd"
            } >>"$LOG" 2>&1 || log "  failed, see $LOG"
        done
    done
    for ((i = 0; i < ${#pairs[@]}; i += 2)); do
        key=${pairs[i]}
        python3 - "$PASSES" "$OUT/$key.json" "$OUT/$key".pass*.json <<'PY' || rm -f "$OUT/$key.json"
import json, statistics, sys
passes, out, parts = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
times, command = [], None
for p in parts:
    r = json.load(open(p))["results"][0]
    times += r["times"]
    command = r["command"]
if len(parts) < passes or not times:
    sys.exit(1)  # a failed pass: no figure rather than a partial one
json.dump({"results": [{"command": command, "times": times, "mean": statistics.mean(times),
                        "stddev": statistics.stdev(times) if len(times) > 1 else 0.0,
                        "median": statistics.median(times), "min": min(times),
                        "max": max(times)}]}, open(out, "w"))
PY
        rm -f "$OUT/$key".pass*.json
    done
}

# hstat KEY FIELD: a field of the exported result in ms (median, mean, stddev, min, max),
# or p99 (nearest rank over the runs' times)
hstat() {
    [[ -s $OUT/$1.json ]] || { echo ''; return; }
    python3 -c 'import json,math,sys
r = json.load(open(sys.argv[1]))["results"][0]
if sys.argv[2] == "p99":
    t = sorted(r["times"])
    v = t[max(0, math.ceil(0.99 * len(t)) - 1)]
else:
    v = r[sys.argv[2]]
print("%.3f" % (v * 1000))' "$OUT/$1.json" "$2"
}

# calc EXPR: float arithmetic; empty if any operand is empty
calc() { python3 -c 'import sys
try: print(sys.argv[1] % eval(sys.argv[2]))
except Exception: print("")' "$1" "$2"; }

# row LABEL KEY [BASEKEY]: a markdown table row for hyperfine results
row() {
    local label=$1 key=$2 base=${3:-} med mean sd min max ratio=''
    med=$(hstat "$key" median)
    if [[ -z $med ]]; then
        say "| $label | error | | | | |"
        return
    fi
    mean=$(hstat "$key" mean) sd=$(hstat "$key" stddev) min=$(hstat "$key" min) max=$(hstat "$key" max)
    if [[ -n $base ]]; then
        local b
        b=$(hstat "$base" median)
        [[ -n $b ]] && ratio=$(calc '%.2fx' "$med / $b")
    fi
    say "| $label | $(calc '%.2f' "$med") | $(calc '%.2f' "$mean") ± $(calc '%.2f' "$sd") | $(calc '%.2f' "$min") | $(calc '%.2f' "$max") | $ratio |"
}

# subscribed CHANNEL: whether CHANNEL has a subscriber on one of the redis-servers at
# SUB_PORTS (default: the bench's own; every master of a cluster in part T), sharded
# (SSUBSCRIBE, what rlock uses on Redis 7) or not.
subscribed() {
    local port n s
    for port in ${SUB_PORTS:-$REDIS_PORT}; do
        n=$(redis-cli -h 127.0.0.1 -p "$port" PUBSUB NUMSUB "$1" 2>/dev/null | sed -n 2p)
        s=$(redis-cli -h 127.0.0.1 -p "$port" PUBSUB SHARDNUMSUB "$1" 2>/dev/null | sed -n 2p)
        ((${n:-0} + ${s:-0} >= 1)) && return 0
    done
    return 1
}
