# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part P, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# A pool's hand-off beside a single lock's, in one run: 20 `exec --wait` waiters queued
# behind one holder of a single lock, then 20 `exec --one-of` waiters of a pool of 3
# (queued on every member; see queue_chain in bench/queue_chain.sh), the same 20 ms jobs.
POOL_WAITERS=20
log "P: pool hand-off (3 members, $POOL_WAITERS waiters) beside a single lock's"
say "## P. Pool hand-off: \`exec --one-of\` of 3 members beside a single lock"
say ""
say "$POOL_WAITERS waiters queued behind one holder, each running a 20 ms job; the first"
say "$QUEUE_HANDOFFS hand-offs (or $POOL_WAITERS) timed: gap = a job's start - the previous job's end, ms."
say "The pool's waiters are queued on all 3 members; one member is handed along the queue,"
say "the other two stay held, so each hand-off claims one member and leaves two queues."
say "Redis CPU = INFO cpu over the hand-offs / hand-offs, us."
say ""
say "| waiter | hand-offs | gap median | p90 | Redis CPU per hand-off | notes |"
say "|---|---:|---:|---:|---:|---|"
declare -A PO_MED
for tool in rlock pool; do
    log "  $tool"
    queue_chain "$tool" "$POOL_WAITERS" >"$TMP/pool"
    read -r ok med p90 cpu note <"$TMP/pool"
    case $tool in
    rlock) how='`rlock exec --wait 600s L -- JOB`' ;;
    pool) how='`rlock exec --wait 600s --one-of A B C -- JOB`' ;;
    esac
    PO_MED[$tool]=$med
    say "| $how | $ok | $med | $p90 | $cpu | $note |"
done
say ""
