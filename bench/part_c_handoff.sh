# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part C, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
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
