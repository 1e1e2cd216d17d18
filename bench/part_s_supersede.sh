# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part S, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# Supersede: the time from the newest --supersede waiter's arrival (its queue entry's
# score, the server's clock in microseconds) to the exit of the older queued --supersede
# waiter it superseded (the older one's shell notes the time it exited), same host, so
# one clock. The issue's bound: under 50 ms median.
SUPERSEDE_RUNS=${BENCH_SUPERSEDE_RUNS:-20}
log "S: supersede, $SUPERSEDE_RUNS runs"
sup_waiters() { rcli ZRANGE 'rlock:lock:{bench-s}:waiters' 0 -1 WITHSCORES; }
sup_queued() { [[ $(rcli ZCARD 'rlock:lock:{bench-s}:waiters') == 1 ]]; }
sup_gaps=()
for ((i = 0; i < SUPERSEDE_RUNS; i++)); do
    "$RLOCK" -q unlock --force bench-s >/dev/null 2>&1
    "$RLOCK" -q lock bench-s --owner bench-holder --lease 60s >/dev/null || continue
    rm -f "$TMP/sup-exit"
    sh -c "$RL exec --wait 60s --supersede --owner old bench-s -- true 2>/dev/null; date +%s%6N >$TMP/sup-exit" &
    old=$!
    until_true 10 sup_queued || { kill "$old"; continue; }
    "$RLOCK" exec --wait 60s --supersede --owner new bench-s -- true 2>/dev/null &
    new=$!
    wait "$old"
    arrival=$(sup_waiters | awk 'prev ~ /:new$/ { printf "%.0f\n", $0; exit } { prev = $0 }')
    [[ -s $TMP/sup-exit && -n $arrival ]] && sup_gaps+=("$(($(cat "$TMP/sup-exit") - arrival))")
    "$RLOCK" -q unlock bench-s --owner bench-holder >/dev/null
    wait "$new"
done
sup_stats=$(printf '%s\n' "${sup_gaps[@]}" | python3 -c 'import statistics, sys
v = sorted(int(x) / 1000 for x in sys.stdin if x.strip())
print(len(v), "%.2f" % statistics.median(v) if v else "error", "%.2f" % v[int(0.9 * (len(v) - 1))] if v else "", "%.2f" % v[-1] if v else "")')
read -r SUP_OK SUP_MED SUP_P90 SUP_WORST <<<"$sup_stats"
say "## S. Supersede: the newest waiter's arrival -> the older queued waiter's exit"
say ""
say "$SUPERSEDE_RUNS runs; ms from the newest \`rlock exec --wait 60s --supersede\` waiter's queue"
say "entry (its arrival, server clock) to the exit of the older one it superseded (exit 79)."
say "Bound: under 50 ms median."
say ""
say "| runs | median | p90 | worst |"
say "|---:|---:|---:|---:|"
say "| $SUP_OK | $SUP_MED | $SUP_P90 | $SUP_WORST |"
say ""
