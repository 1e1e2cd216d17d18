# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part G, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# The rate limiter. Throughput: decisions per second on one connection, each a
# sequential round trip (no pipelining), from bench/limit_bench.cpp through rlock's
# Topology and script, against redis-benchmark -c 1 -P 1 sending the same EVALSHA
# (the ceiling); runs alternate, 3 each, medians. Process: `rlock limit` (always
# allowed) against `rlock lock` (a fresh acquisition each run) under hyperfine.
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
