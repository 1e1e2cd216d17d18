# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part W, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# A hand-off along a queue of N waiters (N in BENCH_QUEUE_SIZES): what a release costs
# when many wait (a fleet of hosts on one migration lock). One holder, N `exec --wait`
# waiters queued behind it, each running a 20 ms job that stamps its start and its end;
# the first BENCH_QUEUE_HANDOFFS hand-offs are timed (gap = a job's start - the previous
# job's end) and Redis's CPU (INFO cpu) over them is divided by their number. flock
# beside it: N `flock FILE sh -c JOB` waiters behind one holder.
QUEUE_SIZES=${BENCH_QUEUE_SIZES:-10 100 1000}
[[ $QUEUE_SIZES =~ ^[0-9\ ]+$ ]] || die "BENCH_QUEUE_SIZES must be numbers, got '$QUEUE_SIZES'"
# queue_chain, the chain itself, is in bench/queue_chain.sh (shared with part P).

log "W: hand-off along a queue of N waiters (N = $QUEUE_SIZES)"
say "## W. Hand-off along a queue of N waiters"
say ""
say "One holder and N waiters queued behind it, each running a 20 ms job; the first"
say "$QUEUE_HANDOFFS hand-offs (or N) timed: gap = a job's start - the previous job's end, ms;"
say "Redis CPU = INFO cpu (used_cpu_sys + used_cpu_user) over them / hand-offs, us."
say ""
say "| waiters | rlock gap median | p90 | Redis CPU per hand-off | flock gap median | p90 | notes |"
say "|---:|---:|---:|---:|---:|---:|---|"
declare -A QW_MED QW_CPU
for n in $QUEUE_SIZES; do
    log "  N = $n"
    need=$((2 * n + 64))
    if (($(ulimit -n) < need)); then ulimit -n "$need" 2>/dev/null || log "  ulimit -n $need refused"; fi
    if (($(rcli CONFIG GET maxclients | sed -n 2p) < need)); then
        rcli CONFIG SET maxclients "$need" >/dev/null || log "  maxclients $need refused"
    fi
    queue_chain rlock "$n" >"$TMP/qw"
    read -r rok rmed rp90 rcpu rnote <"$TMP/qw"
    queue_chain flock "$n" >"$TMP/qw"
    read -r fok fmed fp90 _ fnote <"$TMP/qw"
    QW_MED[$n]=$rmed QW_CPU[$n]=$rcpu
    note="$rok rlock / $fok flock hand-offs"
    [[ $rnote != - ]] && note+=", rlock: $rnote"
    [[ $fnote != - ]] && note+=", flock: $fnote"
    say "| $n | $rmed | $rp90 | $rcpu | $fmed | $fp90 | $note |"
done
say ""
