# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part F, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# `rlock inspect` over many objects in database 1 of the same redis-server (so
# the other parts' keys are not listed): half locks (every 10th with two queued
# waiters), half latches, made by bench/populate_inspect.lua in chunks of
# 100,000 (one EVAL each). JSON and table output go to a file; GNU time gives
# the wall time and peak RSS of each run.
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
