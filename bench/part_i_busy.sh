# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part I, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# Busy CPUs: one busy loop per core (what a build or a CPU-bound job next to rlock does),
# then the hand-off of part C for rlock and flock, and `lock` and `unlock` as processes
# (their medians and 99th percentiles). The loops run at the same priority as everything
# else, and stop (by pid) when the part ends, also on failure (cleanup).
log "I: busy CPUs ($(nproc) busy loops), hand-off and lock/unlock"
BUSY_PIDS=()
for ((c = 0; c < $(nproc); c++)); do
    timeout 1800 sh -c 'while :; do :; done' &
    BUSY_PIDS+=($!)
done
declare -A BUSY_MED BUSY_P90 BUSY_ROW
for tool in rlock flock; do
    log "  hand-off under load: $tool"
    handoff "$tool" >"$TMP/handoff"
    read -r ok med p90 worst note <"$TMP/handoff"
    BUSY_MED[$tool]=$med BUSY_P90[$tool]=$p90
    BUSY_ROW[$tool]="| $tool | $ok | $med | $p90 | $worst | $note |"
done
bench i_lock "$RL lock bench-i --owner bench-owner" "$RL unlock bench-i --force"
bench i_unlock "$RL unlock bench-i --owner bench-owner" "$RL lock bench-i --owner bench-owner"
for pid in "${BUSY_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
for pid in "${BUSY_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
BUSY_PIDS=()

say "## I. Busy CPUs: one busy loop per core"
say ""
say "Hand-off as in part C ($ROUNDS rounds per tool, ms):"
say ""
say "| tool | rounds | median | p90 | worst | notes |"
say "|---|---:|---:|---:|---:|---|"
say "${BUSY_ROW[rlock]}"
say "${BUSY_ROW[flock]}"
say ""
say "\`lock\` and \`unlock\` as processes (hyperfine, --prepare takes or frees the lock first):"
say ""
say "| command | median | p99 | mean ± σ | max |"
say "|---|---:|---:|---:|---:|"
for k in i_lock i_unlock; do
    label=$([[ $k == i_lock ]] && echo 'rlock lock NAME --owner O' || echo 'rlock unlock NAME --owner O')
    say "| $label | $(hstat $k median) | $(hstat $k p99) | $(hstat $k mean) ± $(hstat $k stddev) | $(hstat $k max) |"
done
say ""
