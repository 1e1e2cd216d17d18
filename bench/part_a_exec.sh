# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part A, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
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
