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
# BENCH_QUEUE_ITEMS (items of part H's bulk push, 100000), BENCH_QUEUE_SIZES (part W's
# queue lengths, "10 100 1000"), BENCH_QUEUE_HANDOFFS (hand-offs timed per length, 50),
# BENCH_PARTS (the parts to run, default ABCDEFGHIMOPSTW; BENCH_PARTS=F runs only the
# inspect part, its summary rows included). Part G's C++ program is rlock_limit_bench next to RLOCK_BIN (or
# RLOCK_LIMIT_BENCH), built when missing.
#
# Everything it starts (one redis-server, one etcd, the lock holders/waiters
# of part C) listens on or talks to 127.0.0.1 only, and is stopped by pid on
# exit, also on failure or Ctrl-C. The report goes to stdout and to
# bench/out/report.md; the raw hyperfine JSON stays in bench/out/. It always
# exits 0 once the servers are up: it is a report, not a gate.
# Single-quoted '$1' etc. are meant for the inner sh; trap/indirect functions are reached.
# shellcheck disable=SC2016,SC2034,SC2153,SC2317
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
PARTS=${BENCH_PARTS:-ABCDEFGHIMOPSTW}
[[ $PARTS =~ ^[A-IMOPSTW]+$ ]] || die "BENCH_PARTS must be letters among ABCDEFGHIMOPSTW, got '$PARTS'"
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
declare -a BUSY_PIDS=() # part I's busy loops

cleanup() {
    local rc=$? pid
    set +e
    trap - EXIT INT TERM
    [[ -n ${GUARD:-} ]] && kill -TERM "$GUARD" 2>/dev/null
    for pid in "${BUSY_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done # part I
    [[ -n ${TOPO_PID:-} ]] && kill -TERM "$TOPO_PID" 2>/dev/null && wait "$TOPO_PID" # part T
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

# Part W queues 1000 waiters of two connections each: the server needs the descriptors.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
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
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
# shellcheck source=bench/handoff.sh
source "$ROOT/bench/handoff.sh"
# shellcheck source=bench/queue_chain.sh
source "$ROOT/bench/queue_chain.sh"

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


# ---------------------------------------------------------------- parts
# One file per part (bench/part_X_*.sh), each run in this shell so that the summary sees
# its figures; BENCH_PARTS picks them.
for p in "$ROOT"/bench/part_?_*.sh; do
    x=${p##*/part_}
    x=${x%%_*}
    # shellcheck source=/dev/null
    part "${x^^}" && source "$p"
done
# shellcheck source=bench/summary.sh
source "$ROOT/bench/summary.sh"
