#!/usr/bin/env bash
# bench/run.sh - compare rlock with the tools users would pick instead:
# flock(1), `etcdctl lock` and raw redis-cli commands. See bench/README.md.
#
#   sudo bench/run.sh                                 # installs, builds, measures
#   RLOCK_BIN=build/rlock bench/run.sh                # use an existing binary
#
# Knobs (all bounded): BENCH_RUNS (hyperfine runs per command, default 200),
# BENCH_WARMUP (10), BENCH_HANDOFF_ROUNDS (50), BENCH_HANDOFF_BUDGET (seconds
# per tool for part C, 180), BENCH_RSS_RUNS (20), BENCH_LATCH_ROUNDS (30),
# BENCH_INSPECT_RUNS (3), BENCH_INSPECT_MAX (objects of part F's large row,
# 1000000), BENCH_LIMIT_DECISIONS (per run of part G's throughput rows, 50000),
# BENCH_QUEUE_ITEMS (items of part H's bulk push, 100000), BENCH_PARTS (the parts
# to run, default ABCDEFGH; BENCH_PARTS=F runs only the inspect part, its summary
# rows included). Part G's C++ program is rlock_limit_bench next to RLOCK_BIN (or
# RLOCK_LIMIT_BENCH), built when missing.
#
# Everything it starts (one redis-server, one etcd, the lock holders/waiters
# of part C) listens on or talks to 127.0.0.1 only, and is stopped by pid on
# exit, also on failure or Ctrl-C. The report goes to stdout and to
# bench/out/report.md; the raw hyperfine JSON stays in bench/out/. It always
# exits 0 once the servers are up: it is a report, not a gate.
# Single-quoted '$1' etc. are meant for the inner sh; trap/indirect functions are reached.
# shellcheck disable=SC2016,SC2317
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${RLOCK_BIN:-} ]]; then
    RLOCK_BIN=$(readlink -f -- "$RLOCK_BIN") || { echo "bench: RLOCK_BIN not found" >&2; exit 1; }
fi
cd "$ROOT"
OUT=$ROOT/bench/out
REPORT=$OUT/report.md
LOG=$OUT/bench.log

die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
log() { printf 'bench: %s\n' "$*" >&2; }

# bounded integer knob: name default min max
knob() {
    local v=${!1:-$2}
    if ! [[ $v =~ ^[0-9]+$ ]] || ((v < $3 || v > $4)); then
        die "$1 must be an integer in [$3, $4], got '$v'"
    fi
    printf '%s' "$v"
}
RUNS=$(knob BENCH_RUNS 200 3 5000)
WARMUP=$(knob BENCH_WARMUP 10 0 500)
ROUNDS=$(knob BENCH_HANDOFF_ROUNDS 50 1 1000)
BUDGET=$(knob BENCH_HANDOFF_BUDGET 180 5 3600)
RSS_RUNS=$(knob BENCH_RSS_RUNS 20 1 500)
LATCH_ROUNDS=$(knob BENCH_LATCH_ROUNDS 30 1 1000)
INSPECT_RUNS=$(knob BENCH_INSPECT_RUNS 3 1 50)
INSPECT_MAX=$(knob BENCH_INSPECT_MAX 1000000 100000 5000000)
LIMIT_DECISIONS=$(knob BENCH_LIMIT_DECISIONS 50000 1000 10000000)
PARTS=${BENCH_PARTS:-ABCDEFGH}
[[ $PARTS =~ ^[A-H]+$ ]] || die "BENCH_PARTS must be letters among ABCDEFGH, got '$PARTS'"
part() { [[ $PARTS == *"$1"* ]]; } # part X: whether part X runs

# ---------------------------------------------------------------- install
have_pkg() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == *'install ok installed'* ]]; }

install_missing() {
    local -a missing=()
    local pair cmd pkg
    # command -> Debian package that provides it
    for pair in redis-server:redis-server redis-cli:redis-tools etcd:etcd-server \
        etcdctl:etcd-client hyperfine:hyperfine /usr/bin/time:time flock:util-linux \
        cc:gcc python3:python3 timeout:coreutils setsid:util-linux; do
        cmd=${pair%%:*} pkg=${pair#*:}
        if ! command -v "$cmd" >/dev/null 2>&1; then missing+=("$pkg"); fi
    done
    if command -v dpkg-query >/dev/null 2>&1; then
        # libc.a for the static stamp helper
        have_pkg libc6-dev || missing+=(libc6-dev)
        if [[ -z ${RLOCK_BIN:-} ]]; then
            for pkg in cmake g++ libhiredis-dev libcli11-dev nlohmann-json3-dev doctest-dev; do
                have_pkg "$pkg" || missing+=("$pkg")
            done
        fi
    fi
    ((${#missing[@]})) || return 0
    # de-duplicate
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        die "missing: ${missing[*]} - run as root on Debian (sudo bench/run.sh) or install them"
    fi
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
}
install_missing

mkdir -p "$OUT"
: >"$LOG"

# ---------------------------------------------------------------- rlock binary
if [[ -n ${RLOCK_BIN:-} ]]; then
    RLOCK=$RLOCK_BIN
else
    log "building rlock (Release) into bench/out/build"
    cmake -S . -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release -DRLOCK_BUILD_TESTS=OFF >>"$LOG" 2>&1 ||
        die "cmake configure failed, see $LOG"
    cmake --build "$OUT/build" -j "$(nproc)" >>"$LOG" 2>&1 || die "build failed, see $LOG"
    RLOCK=$OUT/build/rlock
fi
[[ -x $RLOCK ]] || die "no rlock binary at $RLOCK"
RLOCK_VERSION=$("$RLOCK" --version 2>&1) || die "$RLOCK --version failed: $RLOCK_VERSION"

# ---------------------------------------------------------------- stamp helper
STAMP=$OUT/stamp
if ! cc -O2 -static -o "$STAMP" bench/stamp.c 2>>"$LOG"; then
    log "static link failed, building stamp dynamically"
    cc -O2 -o "$STAMP" bench/stamp.c || die "cannot compile bench/stamp.c"
fi

# ---------------------------------------------------------------- servers
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rlock-bench.XXXXXX")
REDIS_PID='' ETCD_PID=''
declare -a JOB_PIDS=() # setsid'ed holders/waiters of part C (pid = pgid)

cleanup() {
    local rc=$? pid
    set +e
    trap - EXIT INT TERM
    [[ -n ${GUARD:-} ]] && kill -TERM "$GUARD" 2>/dev/null
    for pid in "${JOB_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null && kill -TERM -- "-$pid" 2>/dev/null
    done
    for pid in "${JOB_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null && { sleep 0.5; kill -KILL -- "-$pid" 2>/dev/null; }
        wait "$pid" 2>/dev/null
    done
    for pid in $REDIS_PID $ETCD_PID; do
        kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

read -r REDIS_PORT ETCD_PORT ETCD_PEER_PORT < <(
    python3 - <<'EOF'
import socket
socks = []
for _ in range(3):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(*(s.getsockname()[1] for s in socks))
EOF
)

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --protected-mode yes \
    --save '' --appendonly no --daemonize no --dir "$TMP" \
    --logfile "$TMP/redis.log" >/dev/null 2>&1 &
REDIS_PID=$!

ETCD_EP=http://127.0.0.1:$ETCD_PORT
ETCD_PEER=http://127.0.0.1:$ETCD_PEER_PORT
etcd --name bench --data-dir "$TMP/etcd" \
    --listen-client-urls "$ETCD_EP" --advertise-client-urls "$ETCD_EP" \
    --listen-peer-urls "$ETCD_PEER" --initial-advertise-peer-urls "$ETCD_PEER" \
    --initial-cluster "bench=$ETCD_PEER" --initial-cluster-state new \
    >"$TMP/etcd.log" 2>&1 &
ETCD_PID=$!

export ETCDCTL_API=3
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
ectl() { etcdctl --endpoints="$ETCD_EP" "$@"; }

up=0
for _ in $(seq 100); do
    [[ $(rcli ping 2>/dev/null) == PONG ]] && { up=1; break; }
    kill -0 "$REDIS_PID" 2>/dev/null || break
    sleep 0.1
done
((up)) || { cat "$TMP/redis.log" >&2; die "redis-server did not come up on 127.0.0.1:$REDIS_PORT"; }
up=0
for _ in $(seq 200); do
    ectl endpoint health >/dev/null 2>&1 && { up=1; break; }
    kill -0 "$ETCD_PID" 2>/dev/null || break
    sleep 0.1
done
((up)) || { tail -n 20 "$TMP/etcd.log" >&2; die "etcd did not come up on $ETCD_EP"; }

# rlock talks to the throwaway redis; no user config or identity leaks in.
export RLOCK_URL=redis://127.0.0.1:$REDIS_PORT RLOCK_PREFIX=rlock:
unset REDIS_URL RLOCK_OWNER RLOCK_PASSWORD

# From here on nothing is fatal: a failing tool shows up as "error" in the report.
set +e

: >"$REPORT"
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

# ---------------------------------------------------------------- helpers
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
PASSES=4
bench_interleaved() {
    local pass key cmd i
    local -a pairs=("$@")
    for ((pass = 1; pass <= PASSES; pass++)); do
        for ((i = 0; i < ${#pairs[@]}; i += 2)); do
            key=${pairs[i]} cmd=${pairs[i + 1]}
            log "hyperfine (pass $pass/$PASSES): $cmd"
            {
                printf '\n### %s, pass %d: %s\n' "$key" "$pass" "$cmd"
                hyperfine "${HF_COMMON[@]}" --warmup "$((pass == 1 ? WARMUP : 3))" \
                    --runs "$(((RUNS + PASSES - 1) / PASSES))" \
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

# hstat KEY FIELD: a field of the exported result in ms (median, mean, stddev, min, max)
hstat() {
    [[ -s $OUT/$1.json ]] || { echo ''; return; }
    python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.3f" % (r[sys.argv[2]] * 1000))' "$OUT/$1.json" "$2"
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

# ---------------------------------------------------------------- header
say "# rlock benchmark"
say ""
say "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), host: $(uname -srm), $(nproc) CPU(s)"
say "- rlock: \`$RLOCK_VERSION\` ($RLOCK)"
say "- redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on 127.0.0.1:$REDIS_PORT (--save '' --appendonly no)"
say "- etcd $(etcd --version | sed -n 's/^etcd Version: //p') on $ETCD_EP (data dir in $TMP)"
say "- $(hyperfine --version), $HF_MODE, --warmup $WARMUP --runs $RUNS; times in ms"
say "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null) (other work on the host skews every row)"
say ""

# ---------------------------------------------------------------- A
if part A; then
log "A: one locked run of a trivial command"
bench_interleaved a_rlock "$RL exec bench-a -- true" \
    a_rlock_sem "$RL sem exec --permits 3 bench-a-sem -- true" \
    a_rlock_shared "$RL exec --shared bench-a-shared -- true" \
    a_flock "flock $(q "$TMP/a.lock") true" \
    a_etcd "etcdctl --endpoints=$ETCD_EP lock bench-a true" \
    a_true "true" \
    a_rlock_version "$RL --version"

say "## A. Run \`true\` under a lock (one process per run)"
say ""
say "| command | median | mean ± σ | min | max | vs flock |"
say "|---|---:|---:|---:|---:|---:|"
row "rlock exec NAME -- true" a_rlock a_flock
row "rlock sem exec --permits 3 NAME -- true" a_rlock_sem a_flock
row "rlock exec --shared NAME -- true" a_rlock_shared a_flock
row "flock FILE true" a_flock a_flock
row "etcdctl lock NAME true" a_etcd a_flock
row "true (no lock)" a_true a_flock
row "rlock --version (start-up only, no Redis)" a_rlock_version a_flock
say ""
fi

# ---------------------------------------------------------------- B
if part B; then
log "B: lock and unlock as separate processes"
EVAL_CAD="if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
RC="redis-cli -h 127.0.0.1 -p $REDIS_PORT"
bench b_rlock_lock "$RL lock bench-b --owner bench-owner" "$RL unlock bench-b --force"
bench b_rlock_unlock "$RL unlock bench-b --owner bench-owner" "$RL lock bench-b --owner bench-owner"
bench b_set "$RC SET bench-b-k v NX PX 30000" "$RC DEL bench-b-k"
bench b_eval "$RC EVAL \"$EVAL_CAD\" 1 bench-b-k v" "$RC SET bench-b-k v PX 30000"
bench b_ping "$RC PING"
rcli del bench-b-k >/dev/null

say "## B. Acquire and release as separate processes"
say ""
say "Each timed run starts from the opposite state (a hyperfine --prepare step, untimed,"
say "frees or takes the lock first), so every \`lock\` is a fresh acquisition and every"
say "\`unlock\` a real release."
say ""
say "| command | median | mean ± σ | min | max | vs redis-cli |"
say "|---|---:|---:|---:|---:|---:|"
row "rlock lock NAME --owner O" b_rlock_lock b_set
row "redis-cli SET k v NX PX 30000" b_set b_set
row "rlock unlock NAME --owner O" b_rlock_unlock b_eval
row "redis-cli EVAL compare-and-delete" b_eval b_eval
row "redis-cli PING (round-trip floor)" b_ping b_set
say ""
fi

# ---------------------------------------------------------------- C
if part C; then
# The holder's child marks that it runs (so the lock is held), waits for the
# go-signal on a fifo, then execs stamp > end and exits. The waiter's child is
# stamp > start. Hand-off = start - end.
HOLD_SH='printf held > "$1"; read -r _ < "$2"; exec "$3" > "$4"'

alive() { kill -0 "$1" 2>/dev/null; }
# wait_pid PID SECONDS: wait for a job to end, kill its group after SECONDS
wait_pid() {
    local pid=$1 deadline=$((SECONDS + $2))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.01; done
    if alive "$pid"; then
        kill -TERM -- "-$pid" 2>/dev/null
        sleep 0.2
        kill -KILL -- "-$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
}
# until_true SECONDS CMD...: poll CMD every 10 ms
# While a hand-off is measured the harness starts no process (a fork and exec here take a
# CPU from the 2 the hand-off needs): arm_guard, before it, starts the timer that kills a
# job that hangs; await_pid then blocks in `wait`, and go_fifo writes with a builtin.
# arm_guard PID SECONDS: kill PID's process group after SECONDS (GUARD: the timer's pid).
arm_guard() {
    (
        trap 'kill "$sp" 2>/dev/null; exit 0' TERM
        sleep "$2" &
        sp=$!
        wait "$sp"
        kill -TERM -- "-$1" 2>/dev/null
        sleep 0.2
        kill -KILL -- "-$1" 2>/dev/null
    ) &
    GUARD=$!
}
# await_pid PID: PID's exit status, once it has exited; disarms the guard.
await_pid() {
    local s=0
    wait "$1" 2>/dev/null || s=$?
    kill -TERM "$GUARD" 2>/dev/null
    wait "$GUARD" 2>/dev/null
    return "$s"
}
# go_fifo FIFO: write "go" to a FIFO whose reader waits (an O_RDWR open never blocks).
go_fifo() { { printf 'go\n' >&9; } 9<>"$1"; }
rlock_subscribed() { [[ $(rcli PUBSUB NUMSUB "rlock:chan:{$1}:${2:-lock}" 2>/dev/null | sed -n 2p) == 1 ]]; }
etcd_queued() { (($(ectl get --prefix --keys-only "$1/" 2>/dev/null | grep -c .) >= 2)); }

# handoff TOOL: ROUNDS rounds; prints "ok median p90 worst notes".
# Runs in the current shell (call it with a redirection, not in $(...)), so
# that the EXIT trap knows the pids of the jobs it started.
handoff() {
    local tool=$1 i r hp wp hs ws ok=0 errs=0 unblocked=0 overlap=0 start end t0=$SECONDS
    local name=bench-c-$tool lockfile=$TMP/c.lock
    local -a ns=() holder waiter
    case $tool in
    rlock)
        holder=("$RLOCK" exec "$name" --)
        waiter=("$RLOCK" exec --wait 30s "$name" -- "$STAMP")
        ;;
    shared)
        # a writer hands the lock to a reader
        holder=("$RLOCK" exec "$name" --)
        waiter=("$RLOCK" exec --shared --wait 30s "$name" -- "$STAMP")
        ;;
    sem)
        # one permit: the freed permit is handed to the waiter, as a lock is
        holder=("$RLOCK" sem exec --permits 1 "$name" --)
        waiter=("$RLOCK" sem exec --permits 1 --wait 30s "$name" -- "$STAMP")
        ;;
    flock)
        holder=(flock "$lockfile")
        waiter=(flock "$lockfile" "$STAMP")
        ;;
    etcd)
        holder=(etcdctl --endpoints="$ETCD_EP" lock "$name" --)
        waiter=(etcdctl --endpoints="$ETCD_EP" lock "$name" "$STAMP")
        ;;
    esac
    for ((i = 1; i <= ROUNDS; i++)); do
        ((SECONDS - t0 > BUDGET)) && break
        r=$TMP/c-$tool-$i
        mkdir "$r" && mkfifo "$r/go"
        # setsid on a simple command: $! is the job's pid and its process group id
        setsid "${holder[@]}" sh -c "$HOLD_SH" sh "$r/held" "$r/go" "$STAMP" "$r/end" \
            >"$r/holder.out" 2>"$r/holder.err" &
        hp=$!
        JOB_PIDS=("$hp")
        if ! until_true 10 test -e "$r/held"; then
            errs=$((errs + 1))
            { printf '%s round %d: holder never ran\n' "$tool" "$i"; cat "$r/holder.err"; } >>"$LOG"
            wait_pid "$hp" 1
            JOB_PIDS=()
            continue
        fi
        setsid "${waiter[@]}" >"$r/start" 2>"$r/waiter.err" &
        wp=$!
        JOB_PIDS+=("$wp")
        arm_guard "$wp" 40
        # make sure the waiter is really blocked before the holder lets go
        case $tool in
        rlock | shared) if until_true 10 rlock_subscribed "$name"; then sleep 0.05; else sleep 0.2; fi ;;
        sem) if until_true 10 rlock_subscribed "$name" sem; then sleep 0.05; else sleep 0.2; fi ;;
        flock) sleep 0.2 ;;
        etcd) if until_true 10 etcd_queued "$name"; then sleep 0.05; else sleep 0.2; fi ;;
        esac
        if [[ -s $r/start ]] || ! alive "$wp"; then
            unblocked=$((unblocked + 1)) # the waiter got in while the lock was held, or died
        fi
        go_fifo "$r/go"
        await_pid "$wp"
        ws=$?
        wait_pid "$hp" 10
        hs=$?
        JOB_PIDS=()
        start=$(head -n1 "$r/start" 2>/dev/null) end=$(head -n1 "$r/end" 2>/dev/null)
        if ((hs != 0 || ws != 0)) || [[ ! $start =~ ^[0-9]+$ || ! $end =~ ^[0-9]+$ ]]; then
            errs=$((errs + 1))
            {
                printf '%s round %d: holder exit %d, waiter exit %d\n' "$tool" "$i" "$hs" "$ws"
                cat "$r/holder.err" "$r/waiter.err"
            } >>"$LOG"
            continue
        fi
        ((start < end)) && overlap=$((overlap + 1))
        ns+=($((start - end)))
        ok=$((ok + 1))
        rm -rf "$r"
    done
    python3 - "$ok" "$errs" "$unblocked" "$overlap" "${ns[@]}" <<'EOF'
import statistics, sys
ok, errs, unblocked, overlap = map(int, sys.argv[1:5])
ms = sorted(int(x) / 1e6 for x in sys.argv[5:])
notes = []
if errs: notes.append(f"{errs} failed rounds")
if unblocked: notes.append(f"{unblocked} waiters not blocked")
if overlap: notes.append(f"{overlap} overlaps")
note = ", ".join(notes) or "-"
if not ms:
    print(ok, "", "", "", note)
else:
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    print(ok, "%.2f" % statistics.median(ms), "%.2f" % p90, "%.2f" % ms[-1], note)
EOF
}

log "C: hand-off latency, $ROUNDS rounds per tool"
say "## C. Hand-off latency: holder's child exits -> blocked waiter's child starts"
say ""
say "$ROUNDS rounds per tool (at most ${BUDGET}s each); ms from the holder child's last"
say "\`stamp\` to the waiter child's \`stamp\` (CLOCK_REALTIME, same host)."
say ""
say "| tool | waiter | rounds | median | p90 | worst | notes |"
say "|---|---|---:|---:|---:|---:|---|"
declare -A HO_MED HO_MAX
for tool in rlock shared sem flock etcd; do
    log "  $tool"
    handoff "$tool" >"$TMP/handoff"
    read -r ok med p90 worst note <"$TMP/handoff"
    case $tool in
    rlock) how='`rlock exec --wait 30s L -- stamp` (pub/sub)' ;;
    shared) how='`rlock exec --shared --wait 30s L -- stamp` (reader after a writer)' ;;
    sem) how='`rlock sem exec --permits 1 --wait 30s S -- stamp` (permit, pub/sub)' ;;
    flock) how='`flock FILE stamp` (kernel)' ;;
    etcd) how='`etcdctl lock L stamp` (watch)' ;;
    esac
    HO_MED[$tool]=$med HO_MAX[$tool]=$worst
    say "| $tool | $how | $ok | $med | $p90 | $worst | $note |"
done
say ""
fi

# ---------------------------------------------------------------- D
if part D; then
# rss KEY PREP CMD...: run function PREP (if any, untimed) before each run; peak RSS (KiB, GNU time %M) over RSS_RUNS runs -> "median max" in MiB
rss() {
    local key=$1 prep=$2 i kib
    shift 2
    local -a vals=()
    for ((i = 0; i < RSS_RUNS; i++)); do
        [[ -n $prep ]] && "$prep" >/dev/null 2>&1
        if /usr/bin/time -f %M -o "$TMP/rss" "$@" >/dev/null 2>>"$LOG"; then
            kib=$(tail -n1 "$TMP/rss")
            [[ $kib =~ ^[0-9]+$ ]] && vals+=("$kib")
        else
            printf 'rss %s: exit %s\n' "$key" "$?" >>"$LOG"
        fi
    done
    python3 -c 'import statistics, sys
v = sorted(int(x) for x in sys.argv[1:])
print("%.2f %.2f %d" % (statistics.median(v) / 1024, v[-1] / 1024, len(v)) if v else "error error 0")' "${vals[@]}"
}

log "D: peak RSS"
say "## D. Peak RSS (GNU time %M, MiB; the largest of the process and its children)"
say ""
say "| command | median | max | runs |"
say "|---|---:|---:|---:|"
declare -A RSS_MAX
rss_row() {
    local label=$1 key=$2 prep=$3 med max n
    shift 3
    read -r med max n <<<"$(rss "$key" "$prep" "$@")"
    RSS_MAX[$key]=$max
    say "| $label | ${med:-error} | ${max:-error} | ${n:-0} |"
}
rss_row 'rlock exec L -- true' r_exec '' "$RLOCK" exec bench-d -- true
rss_row 'rlock exec L -- sleep 0.2 (holding, renewing)' r_hold '' "$RLOCK" exec bench-d -- sleep 0.2
prep_free_d2() { "$RLOCK" unlock bench-d2 --force; }
prep_del_k() { rcli DEL bench-d-k; }
rss_row 'rlock lock L --owner O' r_lock prep_free_d2 "$RLOCK" lock bench-d2 --owner bench-owner
rss_row 'etcdctl lock L true' e_lock '' etcdctl --endpoints="$ETCD_EP" lock bench-d true
rss_row 'redis-cli SET k v NX PX 30000' r_set prep_del_k redis-cli -h 127.0.0.1 -p "$REDIS_PORT" SET bench-d-k v NX PX 30000
rss_row 'flock FILE true' f_lock '' flock "$TMP/d.lock" true
rss_row 'flock FILE sleep 0.2' f_hold '' flock "$TMP/d.lock" sleep 0.2
say ""
fi

# ---------------------------------------------------------------- E
if part E; then
# Each round: a latch of count 1, one `rlock latch await` blocked on it (its
# shell runs stamp > start as soon as rlock exits 0), then the last
# count-down. The reference is the time the server received that count-down,
# as redis-cli MONITOR prints it (the server's CLOCK_REALTIME, the same clock
# as stamp's on this host): the zero is published while that request runs.
# The count-down is the second script of the round naming the latch channel
# (set is the first; await's reads do not name it).
AWAIT_SH='"$1" -q latch await "$2" --wait 30s && exec "$3"'
latch_subscribed() { [[ $(rcli PUBSUB NUMSUB "rlock:chan:{$1}:latch" 2>/dev/null | sed -n 2p) == 1 ]]; }

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
fi

# ---------------------------------------------------------------- F
# `rlock inspect` over many objects in database 1 of the same redis-server (so
# the other parts' keys are not listed): half locks (every 10th with two queued
# waiters), half latches, made by bench/populate_inspect.lua in chunks of
# 100,000 (one EVAL each). JSON and table output go to a file; GNU time gives
# the wall time and peak RSS of each run.
if part F; then
INSPECT_DB=1
INSPECT_URL=redis://127.0.0.1:$REDIS_PORT/$INSPECT_DB
POPULATE=$(<bench/populate_inspect.lua)

# inspect_fill FROM TO: create objects FROM..TO-1
inspect_fill() {
    local i=$1 n
    while ((i < $2)); do
        n=$(($2 - i < 100000 ? $2 - i : 100000))
        rcli -n "$INSPECT_DB" EVAL "$POPULATE" 0 rlock: "$i" "$n" >/dev/null 2>>"$LOG" || return 1
        i=$((i + n))
    done
}

# inspect_runs FORMAT [BINARY [URL]]: INSPECT_RUNS runs -> "median-s max-MiB runs listed"
# (listed: objects in the last run's output, one per line)
inspect_runs() {
    local fmt=$1 bin=${2:-$RLOCK} url=${3:-$INSPECT_URL} i s k listed=0
    local -a secs=() kibs=()
    for ((i = 0; i < INSPECT_RUNS; i++)); do
        if /usr/bin/time -f '%e %M' -o "$TMP/inspect.time" \
            "$bin" --url "$url" --format "$fmt" inspect >"$TMP/inspect.out" 2>>"$LOG"; then
            read -r s k < <(tail -n1 "$TMP/inspect.time")
            secs+=("$s") kibs+=("$k")
        else
            printf 'inspect %s: exit %s\n' "$fmt" "$?" >>"$LOG"
        fi
    done
    if [[ $fmt == json ]]; then
        # a complete document ends with "]" (today's puts it on a line of its own, the old
        # listing's array was one line); a truncated one does not count
        [[ $(tail -c 2 "$TMP/inspect.out") == *']'* ]] && listed=$(grep -o '{"type"' "$TMP/inspect.out" | wc -l)
    else
        listed=$(($(wc -l <"$TMP/inspect.out") - 1))
    fi
    rm -f "$TMP/inspect.out"
    python3 -c 'import statistics, sys
n = int(sys.argv[1]); s = [float(x) for x in sys.argv[2:2 + n]]; k = [int(x) for x in sys.argv[2 + n:]]
print("%.2f %.2f %d" % (statistics.median(s), max(k) / 1024, n) if n else "error error 0")' \
        "${#secs[@]}" "${secs[@]}" "${kibs[@]}" | tr '\n' ' '
    echo "$listed"
}

log "F: inspect over 100,000 and $INSPECT_MAX objects"
say "## F. \`rlock inspect\` over many objects (half locks, half latches)"
say ""
say "Wall time (median of $INSPECT_RUNS runs, s) and peak RSS (max, MiB, GNU time %M)"
say "of \`rlock inspect\` writing to a file; *listed* counts the objects printed."
say ""
say "| objects | format | median s | peak RSS MiB | runs | listed |"
say "|---:|---|---:|---:|---:|---:|"
declare -A INSPECT_RSS
filled=0
for count in 100000 "$INSPECT_MAX"; do
    if ! inspect_fill "$filled" "$count"; then
        say "| $count | - | error (populating failed, see bench.log) | | | |"
        break
    fi
    filled=$count
    for fmt in json table; do
        read -r sec mib n listed <<<"$(inspect_runs "$fmt")"
        INSPECT_RSS[$count.$fmt]=$mib
        say "| $count | $fmt | $sec | $mib | $n | $listed |"
    done
done
rcli -n "$INSPECT_DB" FLUSHDB >/dev/null 2>&1
say ""

# Issue 7's "at least as fast as today", side by side: the listing inspect replaced (the
# commit before d910bba, which built the whole JSON array before printing a byte), built
# from this repository's history into $TMP, and today's, on the same 100,000 locks (the
# only type it knew) in database 2; JSON, runs alternating.
OLD_INSPECT_REV=d910bba^
old_inspect_build() {
    git -C "$ROOT" cat-file -e "$OLD_INSPECT_REV^{commit}" 2>>"$LOG" || return 1
    mkdir -p "$TMP/old-src" || return 1
    git -C "$ROOT" archive "$OLD_INSPECT_REV" | tar -x -C "$TMP/old-src" || return 1
    cmake -S "$TMP/old-src" -B "$TMP/old-build" -DCMAKE_BUILD_TYPE=Release >>"$LOG" 2>&1 &&
        timeout 900 cmake --build "$TMP/old-build" -j"$(nproc)" --target rlock >>"$LOG" 2>&1
}
log "F: the old listing, side by side"
say "The listing \`inspect\` replaced ($OLD_INSPECT_REV, built from this repository) and"
say "today's, side by side on the same 100,000 locks, JSON, runs alternating:"
say ""
say "| listing | median s | peak RSS MiB | runs | listed |"
say "|---|---:|---:|---:|---:|"
OLD_URL=redis://127.0.0.1:$REDIS_PORT/2
if ! old_inspect_build; then
    say "| old ($OLD_INSPECT_REV) | not built (no git history or build tools; see bench.log) | | | |"
elif ! rcli -n 2 EVAL "$POPULATE" 0 rlock: 0 100000 locks >/dev/null 2>>"$LOG"; then
    say "| - | error (populating failed, see bench.log) | | | |"
else
    declare -A SIDE_S=() SIDE_RSS=() SIDE_LISTED=()
    declare -a side_secs_old=() side_secs_new=()
    for ((round = 0; round < INSPECT_RUNS; round++)); do
        for who in old new; do
            bin=$RLOCK
            [[ $who == old ]] && bin=$TMP/old-build/rlock
            read -r sec mib n listed <<<"$(INSPECT_RUNS=1 inspect_runs json "$bin" "$OLD_URL")"
            [[ $who == old ]] && side_secs_old+=("$sec") || side_secs_new+=("$sec")
            SIDE_RSS[$who]=$(calc '%.2f' "max(${SIDE_RSS[$who]:-0}, $mib)")
            SIDE_LISTED[$who]=$listed
        done
    done
    SIDE_S[old]=$(python3 -c 'import statistics, sys; print("%.2f" % statistics.median(map(float, sys.argv[1:])))' "${side_secs_old[@]}")
    SIDE_S[new]=$(python3 -c 'import statistics, sys; print("%.2f" % statistics.median(map(float, sys.argv[1:])))' "${side_secs_new[@]}")
    say "| old ($OLD_INSPECT_REV): one array, built whole | ${SIDE_S[old]} | ${SIDE_RSS[old]} | $INSPECT_RUNS | ${SIDE_LISTED[old]} |"
    say "| today: streamed | ${SIDE_S[new]} | ${SIDE_RSS[new]} | $INSPECT_RUNS | ${SIDE_LISTED[new]} |"
fi
rcli -n 2 FLUSHDB >/dev/null 2>&1
say ""
fi

# ---------------------------------------------------------------- G
# The rate limiter. Throughput: decisions per second on one connection, each a
# sequential round trip (no pipelining), from bench/limit_bench.cpp through rlock's
# Topology and script, against redis-benchmark -c 1 -P 1 sending the same EVALSHA
# (the ceiling); runs alternate, 3 each, medians. Process: `rlock limit` (always
# allowed) against `rlock lock` (a fresh acquisition each run) under hyperfine.
if part G; then
LIMIT_BENCH=${RLOCK_LIMIT_BENCH:-$(dirname "$RLOCK")/rlock_limit_bench}
if [[ ! -x $LIMIT_BENCH ]]; then
    log "building rlock_limit_bench in $(dirname "$RLOCK")"
    cmake --build "$(dirname "$RLOCK")" --target rlock_limit_bench >>"$LOG" 2>&1 ||
        log "  rlock_limit_bench could not be built, see $LOG"
fi
# rps_of: "N requests per second" of redis-benchmark -q's last line
rps_of() { tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n1; }
log "G: limiter decisions per second ($LIMIT_DECISIONS per run), rlock limit vs rlock lock"
declare -a G_CPP=() G_RB=()
if [[ -x $LIMIT_BENCH ]]; then
    mapfile -t G_EVALSHA < <("$LIMIT_BENCH" --evalsha-args bench-g-rb)
    for _ in 1 2 3; do
        v=$("$LIMIT_BENCH" "$RLOCK_URL" "$LIMIT_DECISIONS" 2>>"$LOG" | cut -d' ' -f3)
        [[ -n $v ]] && G_CPP+=("$v")
        v=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c 1 -P 1 -n "$LIMIT_DECISIONS" -q \
            "${G_EVALSHA[@]}" 2>>"$LOG" | rps_of)
        [[ -n $v ]] && G_RB+=("$v")
    done
fi
median() { python3 -c 'import statistics, sys
v = [float(x) for x in sys.argv[1:]]
print("%.0f" % statistics.median(v) if v else "")' "$@"; }
G_CPP_MED=$(median "${G_CPP[@]}") G_RB_MED=$(median "${G_RB[@]}")
bench g_limit "$RL limit bench-g --rate 1000000000 --per 1s --burst 1000000000"
bench g_lock "$RL lock bench-g-lock --owner bench-owner" "$RL unlock bench-g-lock --force"

say "## G. Rate limiter"
say ""
say "Decisions per second on one connection, sequential round trips (3 alternating runs"
say "of $LIMIT_DECISIONS each, median; every decision allowed, so every one writes):"
say ""
say "| client | decisions/s | runs | vs redis-benchmark |"
say "|---|---:|---|---:|"
say "| rlock_limit_bench (Topology + limit_decide.lua) | ${G_CPP_MED:-error} | ${G_CPP[*]} | $(calc '%.2fx' "$G_CPP_MED / $G_RB_MED") |"
say "| redis-benchmark -c 1 -P 1 EVALSHA (same script and args) | ${G_RB_MED:-error} | ${G_RB[*]} | 1.00x |"
say ""
say "| command | median | mean ± σ | min | max | vs rlock lock |"
say "|---|---:|---:|---:|---:|---:|"
row "rlock limit NAME --rate N --per 1s (allowed)" g_limit g_lock
row "rlock lock NAME --owner O (fresh acquisition)" g_lock g_lock
say ""
fi

# ---------------------------------------------------------------- H
# Delayed queues. H1: `rlock delay-push --lines` of QUEUE_ITEMS items (due in
# an hour, so nothing is consumed) against the ceiling: redis-benchmark -P 64
# running EVALSHA of the same push script (its SHA taken from MONITOR while
# rlock pushes one item), with random ids. H2: delivery lateness at 1,000
# items/s sustained: 10,000 items due 1 ms apart (pushed beforehand through the
# push script with redis-cli --pipe, absolute due times on the server clock),
# taken by one `delay-pop --forever`; lateness_ms is the server's (delivery - due).
if part H; then
QUEUE_ITEMS=$(knob BENCH_QUEUE_ITEMS 100000 1000 1000000)
seq -f 'item-%06g' "$QUEUE_ITEMS" >"$TMP/lines"
# qkeys QUEUE: the KEYS every queue script takes (lua/include/queue_common.lua), in order
qkeys() {
    local t="{$1}"
    echo "rlock:queue:$t rlock:queue:$t:sched rlock:queue:$t:items rlock:queue:$t:meta" \
        "rlock:queue:$t:inflight rlock:queue:$t:leases rlock:queue:$t:dead" \
        "rlock:queue:$t:finished"
}
QKEYS_N=8
# shellcheck disable=SC2046
qdel() { rcli DEL $(qkeys "$1") >/dev/null; }

log "H: delay-push --lines of $QUEUE_ITEMS items, and the redis-benchmark ceiling"
# line-buffered: the TERM below ends redis-cli before it would flush a full buffer
timeout 5 stdbuf -oL redis-cli -h 127.0.0.1 -p "$REDIS_PORT" MONITOR >"$TMP/monitor" 2>/dev/null &
MON=$!
until_true 5 grep -q OK "$TMP/monitor"
"$RLOCK" -q delay-push bench-sha x --delay 1h >>"$LOG" 2>&1
sleep 0.2
kill "$MON" 2>/dev/null
wait "$MON" 2>/dev/null
PUSH_SHA=$(grep -o '"EVALSHA" "[0-9a-f]*"' "$TMP/monitor" | head -n1 | cut -d'"' -f4)
qdel bench-sha

start=$("$STAMP")
"$RLOCK" delay-push bench-push --lines --delay 1h <"$TMP/lines" >"$TMP/pushed" 2>>"$LOG"
end=$("$STAMP")
pushed=$(grep -c '"duplicate":false' "$TMP/pushed")
PUSH_RATE=$(calc '%.0f' "$pushed / (($end - $start) / 1e9)")
PUSH_SECS=$(calc '%.2f' "($end - $start) / 1e9")
qdel bench-push
CEIL_RATE=error CEIL_ITEMS=0
if [[ -n $PUSH_SHA ]]; then
    # shellcheck disable=SC2046
    CEIL_RATE=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -P 64 -n "$QUEUE_ITEMS" \
        -r 1000000000 --csv EVALSHA "$PUSH_SHA" "$QKEYS_N" $(qkeys bench-ceil) \
        "rlock:chan:{bench-ceil}:queue" delay 3600000 'id-__rand_int__' item-000000 \
        2>>"$LOG" | tail -n1 | cut -d'"' -f4)
    CEIL_ITEMS=$(rcli HLEN "rlock:queue:{bench-ceil}:meta")
    qdel bench-ceil
fi
PUSH_RATIO=$(calc '%.2f' "$PUSH_RATE / $CEIL_RATE")

log "H: lateness of 10,000 items due 1 ms apart (1,000 items/s)"
read -r now_s now_us < <(rcli TIME | tr '\n' ' ')
first_due=$((now_s * 1000 + now_us / 1000 + 3000))
# shellcheck disable=SC2046
python3 -c 'import sys
sha, first, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for i in range(10000):
    args = ["EVALSHA", sha, str(len(keys)), *keys, "rlock:chan:{bench-late}:queue", "at",
            str(first + i), "late-%05d" % i, "x"]
    sys.stdout.write("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args))' \
    "$PUSH_SHA" "$first_due" $(qkeys bench-late) >"$TMP/late.resp"
"$RLOCK" delay-pop bench-late --forever --count 100 >"$TMP/late.out" 2>>"$LOG" &
POP=$!
rcli --pipe <"$TMP/late.resp" >>"$LOG" 2>&1
until_true 60 test "$(wc -l <"$TMP/late.out")" -ge 10000
kill -TERM "$POP" 2>/dev/null
wait "$POP" 2>/dev/null
read -r LATE_N LATE_P50 LATE_P99 LATE_MAX < <(python3 -c 'import json, sys
l = sorted(json.loads(x)["lateness_ms"] for x in open(sys.argv[1]))
print(len(l), l[len(l) // 2], l[len(l) * 99 // 100], l[-1]) if l else print(0, "error", "error", "error")' "$TMP/late.out")
qdel bench-late

say "## H. Delayed queues"
say ""
say "| bulk push of $QUEUE_ITEMS items | items/s | vs ceiling |"
say "|---|---:|---:|"
say "| \`rlock delay-push --lines\` (512 EVALSHA per round trip, $PUSH_SECS s) | $PUSH_RATE | ${PUSH_RATIO}x |"
say "| \`redis-benchmark -P 64\` EVALSHA of the push script (ceiling; $CEIL_ITEMS ids stored) | $CEIL_RATE | 1.00x |"
say ""
say "| delivery lateness: 10,000 items due 1 ms apart, one \`delay-pop --forever --count 100\` | items | p50 ms | p99 ms | worst ms |"
say "|---|---:|---:|---:|---:|"
say "| server-side lateness_ms | $LATE_N | $LATE_P50 | $LATE_P99 | $LATE_MAX |"
say ""
fi

# ---------------------------------------------------------------- summary
# verdict LABEL VALUE_EXPR LIMIT_EXPR SHOWN
verdict() {
    local label=$1 value=$2 limit=$3 shown=$4 ok
    ok=$(calc '%s' "'PASS' if ($value) <= ($limit) else 'FAIL'")
    say "| $label | $shown | ${ok:-FAIL (no data)} |"
}
ra=$(hstat a_rlock median) fa=$(hstat a_flock median) rsem=$(hstat a_rlock_sem median)
rsh=$(hstat a_rlock_shared median)
rl=$(hstat b_rlock_lock median) rs=$(hstat b_set median)
say "## Summary against targets (parts $PARTS)"
say ""
say "| target | measured | verdict |"
say "|---|---|---|"
part A && verdict 'rlock exec NAME -- true <= 1.5x flock FILE true' "$ra / $fa" 1.5 \
    "$(calc '%.2f' "$ra") ms vs $(calc '%.2f' "$fa") ms = $(calc '%.2fx' "$ra / $fa")"
part A && verdict 'rlock sem exec NAME -- true <= 1.5x flock FILE true' "$rsem / $fa" 1.5 \
    "$(calc '%.2f' "$rsem") ms vs $(calc '%.2f' "$fa") ms = $(calc '%.2fx' "$rsem / $fa")"
part B && verdict 'rlock lock <= 0.8x redis-cli SET' "$rl / $rs" 0.8 \
    "$(calc '%.2f' "$rl") ms vs $(calc '%.2f' "$rs") ms = $(calc '%.2fx' "$rl / $rs")"
part C && verdict 'rlock hand-off median <= 2 ms' "${HO_MED[rlock]}" 2 "${HO_MED[rlock]:-?} ms"
part C && verdict 'rlock hand-off worst <= 10 ms' "${HO_MAX[rlock]}" 10 "${HO_MAX[rlock]:-?} ms"
part A && verdict 'rlock exec --shared NAME -- true <= 1.5x flock FILE true' "$rsh / $fa" 1.5 \
    "$(calc '%.2f' "$rsh") ms vs $(calc '%.2f' "$fa") ms = $(calc '%.2fx' "$rsh / $fa")"
part C && verdict 'reader hand-off median <= 2 ms' "${HO_MED[shared]}" 2 "${HO_MED[shared]:-?} ms"
part C && verdict 'reader hand-off worst <= 10 ms' "${HO_MAX[shared]}" 10 "${HO_MAX[shared]:-?} ms"
part C && verdict 'permit hand-off median <= 2 ms' "${HO_MED[sem]}" 2 "${HO_MED[sem]:-?} ms"
part C && verdict 'permit hand-off worst <= 10 ms' "${HO_MAX[sem]}" 10 "${HO_MAX[sem]:-?} ms"
part E && verdict 'rlock latch await wake-up median <= 2 ms' "$LW_MED" 2 "${LW_MED:-?} ms"
part D && verdict 'rlock exec peak RSS <= 5 MiB (max of both exec rows)' \
    "max(${RSS_MAX[r_exec]}, ${RSS_MAX[r_hold]})" 5 \
    "$(calc '%.2f' "max(${RSS_MAX[r_exec]}, ${RSS_MAX[r_hold]})") MiB"
if part G; then
    verdict 'limiter decisions/s through Topology >= 0.9x redis-benchmark EVALSHA' \
        "0.9 * $G_RB_MED" "$G_CPP_MED" \
        "${G_CPP_MED:-?} vs ${G_RB_MED:-?} = $(calc '%.2fx' "$G_CPP_MED / $G_RB_MED")"
    gl=$(hstat g_limit median) gk=$(hstat g_lock median)
    verdict 'rlock limit <= 1.1x rlock lock (one process each)' "$gl / $gk" 1.1 \
        "$(calc '%.2f' "$gl") ms vs $(calc '%.2f' "$gk") ms = $(calc '%.2fx' "$gl / $gk")"
fi
if part F; then
    for count in 100000 "$INSPECT_MAX"; do
        verdict "rlock inspect peak RSS <= 16 MiB at $count objects (JSON, table)" \
            "max(${INSPECT_RSS[$count.json]:-x}, ${INSPECT_RSS[$count.table]:-x})" 16 \
            "${INSPECT_RSS[$count.json]:-?} / ${INSPECT_RSS[$count.table]:-?} MiB"
    done
    verdict 'rlock inspect of 100,000 locks <= the old listing, side by side' \
        "${SIDE_S[new]:-x}" "${SIDE_S[old]:-x}" "${SIDE_S[new]:-?} s vs ${SIDE_S[old]:-?} s"
fi
part H && verdict 'delay-push --lines >= 0.5x redis-benchmark -P 64 of its script' \
    "0.5" "$PUSH_RATIO" "${PUSH_RATIO:-?}x"
part H && verdict 'delivery lateness p99 at 1,000 items/s < 50 ms' "$LATE_P99" 49 "${LATE_P99:-?} ms"
say ""
say "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)."
say "Raw data: bench/out/*.json (hyperfine), bench/out/bench.log (tool output)."
log "report written to $REPORT"
exit 0
