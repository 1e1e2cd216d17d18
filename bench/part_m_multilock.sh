# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part M, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# Several locks as one (MultiLock) against one name, on one server: the cost of the second
# name in a fresh `lock`, and in a hand-off between two execs of both names.
log "M: two names as one (MultiLock) vs one name"
PREP["m_lock1"]="$RL unlock --force bench-m-a"
PREP["m_lock2"]="$RL unlock --force bench-m-a bench-m-b"
bench_interleaved m_lock1 "$RL lock bench-m-a --owner bench-owner" \
    m_lock2 "$RL lock bench-m-a bench-m-b --owner bench-owner"
"$RLOCK" unlock --force bench-m-a bench-m-b >/dev/null 2>&1

say "## M. Two names as one (MultiLock) vs one name"
say ""
say "\`lock\`: each timed run starts with the names free (an untimed --prepare frees them);"
say "rows measured in interleaved passes, as part A's."
say ""
say "| command | median | mean ± σ | min | max | vs one name |"
say "|---|---:|---:|---:|---:|---:|"
row "rlock lock A --owner O" m_lock1 m_lock1
row "rlock lock A B --owner O" m_lock2 m_lock1
say ""
say "Hand-off ($ROUNDS rounds each, as part C measures it): \`rlock exec --wait 30s A B -- stamp\`"
say "blocked behind \`rlock exec A B\`, against the same with one name, one after the other."
say ""
say "| waiter | rounds | median | p90 | worst | notes |"
say "|---|---:|---:|---:|---:|---|"
declare -A M_HO
for tool in rlock multi; do
    log "  hand-off: $tool"
    handoff "$tool" >"$TMP/handoff"
    read -r ok med p90 worst note <"$TMP/handoff"
    M_HO[$tool]=$med
    case $tool in
    rlock) how='one name: `exec --wait 30s A`' ;;
    multi) how='two names: `exec --wait 30s A B`' ;;
    esac
    say "| $how | $ok | $med | $p90 | $worst | $note |"
done
say ""
