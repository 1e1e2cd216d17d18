# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part B, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
log "B: lock and unlock as separate processes"
EVAL_CAD="if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
RC="redis-cli -h 127.0.0.1 -p $REDIS_PORT"
bench b_rlock_lock "$RL lock bench-b --owner bench-owner" "$RL unlock bench-b --force"
bench b_rlock_unlock "$RL unlock bench-b --owner bench-owner" "$RL lock bench-b --owner bench-owner"
bench b_set "$RC SET bench-b-k v NX PX 30000" "$RC DEL bench-b-k"
bench b_eval "$RC EVAL \"$EVAL_CAD\" 1 bench-b-k v" "$RC SET bench-b-k v PX 30000"
bench b_ping "$RC PING"
rcli del bench-b-k >/dev/null

say "## B. Acquire and release as separate processes"
say ""
say "Each timed run starts from the opposite state (a hyperfine --prepare step, untimed,"
say "frees or takes the lock first), so every \`lock\` is a fresh acquisition and every"
say "\`unlock\` a real release."
say ""
say "| command | median | mean ± σ | min | max | vs redis-cli |"
say "|---|---:|---:|---:|---:|---:|"
row "rlock lock NAME --owner O" b_rlock_lock b_set
row "redis-cli SET k v NX PX 30000" b_set b_set
row "rlock unlock NAME --owner O" b_rlock_unlock b_eval
row "redis-cli EVAL compare-and-delete" b_eval b_eval
row "redis-cli PING (round-trip floor)" b_ping b_set
say ""
