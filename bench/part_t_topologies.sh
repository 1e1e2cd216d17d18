# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part T, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# Topologies: a 3-master Redis Cluster (no replicas: the cost of routing, not of
# replication) and a Sentinel deployment (1 master, 1 replica, 3 sentinels, down-after
# 1000 ms), started here on free loopback ports and stopped by pid at the end of the part
# (and by run.sh's cleanup on failure). Side by side with the bench's standalone server:
# per-process `lock` and `exec NAME -- true`; the hand-off on the cluster (sharded pub/sub);
# and the time from a Sentinel master's death (SIGKILL) to the first waiter's job start.
FAILOVER_ROUNDS=$(knob BENCH_FAILOVER_ROUNDS 10 1 100)
T_DIR=$TMP/topologies
mkdir -p "$T_DIR"
declare -a TOPO_PIDS=()
# free_ports N: N loopback ports free a moment ago, each with port + 10000 free too (a
# cluster node's bus port) and below 55536.
free_ports() {
    python3 - "$1" <<'PY'
import random, socket, sys
out, tried = [], set()
while len(out) < int(sys.argv[1]):
    p = random.randint(20000, 55000)
    if p in tried: continue
    tried.add(p)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        out.append(p)
    except OSError:
        pass
print(*out)
PY
}
# t_server PORT ARGS...: a redis-server on 127.0.0.1:PORT in its own directory
t_server() {
    local port=$1
    shift
    mkdir -p "$T_DIR/$port"
    (cd "$T_DIR/$port" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' \
        --appendonly no --daemonize no --logfile "$T_DIR/$port/log" "$@") >/dev/null 2>&1 &
    TOPO_PIDS+=($!)
    eval "T_PID_$port=$!"
}
t_cli() { redis-cli -h 127.0.0.1 -p "$@"; }
t_up() { [[ $(t_cli "$1" PING 2>/dev/null) == PONG ]]; }
stop_topologies() {
    local pid
    for pid in "${TOPO_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${TOPO_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    TOPO_PIDS=()
}

log "T: topologies (cluster, sentinel) side by side with standalone"
read -r C0 C1 C2 M0 M1 S0 S1 S2 < <(free_ports 8)
for p in $C0 $C1 $C2; do
    t_server "$p" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000
done
t_server "$M0"
t_server "$M1" --replicaof 127.0.0.1 "$M0"
for p in $S0 $S1 $S2; do
    mkdir -p "$T_DIR/$p"
    printf 'port %s\nbind 127.0.0.1\nsentinel monitor bm 127.0.0.1 %s 2\nsentinel down-after-milliseconds bm 1000\nsentinel failover-timeout bm 3000\n' \
        "$p" "$M0" >"$T_DIR/$p/sentinel.conf"
    (cd "$T_DIR/$p" && exec redis-server "$T_DIR/$p/sentinel.conf" --sentinel \
        --logfile "$T_DIR/$p/log") >/dev/null 2>&1 &
    TOPO_PIDS+=($!)
done
T_OK=1
for p in $C0 $C1 $C2 $M0 $M1 $S0 $S1 $S2; do until_true 10 t_up "$p" || T_OK=0; done
# --cluster create assigns the slot ranges in the order the nodes are named: C0 serves
# 0-5460, C1 5461-10922, C2 10923-16383.
redis-cli --cluster create "127.0.0.1:$C0" "127.0.0.1:$C1" "127.0.0.1:$C2" --cluster-yes \
    >>"$LOG" 2>&1 || T_OK=0
cluster_ok() {
    local p
    for p in $C0 $C1 $C2; do
        [[ $(t_cli "$p" CLUSTER INFO 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p') == ok ]] || return 1
    done
}
sentinels_ready() {
    local p
    for p in $S0 $S1 $S2; do
        [[ $(t_cli "$p" SENTINEL MASTER bm 2>/dev/null | tr -d '\r' |
            sed -n '/^num-other-sentinels$/{n;p}') == 2 ]] || return 1
        # exactly one replica, and healthy (flags "slave", not "slave,s_down")
        [[ $(t_cli "$p" SENTINEL REPLICAS bm 2>/dev/null | tr -d '\r' |
            sed -n '/^flags$/{n;p}') == slave ]] || return 1
    done
}
until_true 20 cluster_ok || T_OK=0
until_true 30 sentinels_ready || T_OK=0
((T_OK)) || log "  the topologies did not come up, see $LOG and $T_DIR/*/log"

C_URL=redis-cluster://127.0.0.1:$C0,127.0.0.1:$C1,127.0.0.1:$C2
M_URL=redis-sentinel://127.0.0.1:$S0,127.0.0.1:$S1,127.0.0.1:$S2/bm
S_URL=$RLOCK_URL
# name_on INDEX: a lock name whose slot node INDEX (0, 1, 2) serves
name_on() {
    local i slot lo=$((5461 * $1)) hi
    hi=$(($1 == 2 ? 16383 : 5461 * ($1 + 1) - 1))
    for ((i = 0; ; i++)); do
        slot=$(t_cli "$C0" CLUSTER KEYSLOT "bench-t-$i")
        ((slot >= lo && slot <= hi)) && { echo "bench-t-$i"; return; }
    done
}
read -r N0 N1 N2 < <(echo "$(name_on 0) $(name_on 1) $(name_on 2)")
# Every node has run every script once before the timed runs (a fresh node answers the
# first EVALSHA with NOSCRIPT, which costs one EVAL of the script's text).
for u in "$C_URL" "$M_URL"; do
    for n in "$N0" "$N1" "$N2"; do
        {
            "$RLOCK" --url "$u" exec "$n" -- true
            "$RLOCK" --url "$u" lock "$n" --owner bench-owner
            "$RLOCK" --url "$u" unlock "$n" --owner bench-owner
        } >>"$LOG" 2>&1
    done
done
# A process's cost on the cluster depends on where its name lives: on the first seed
# (no redirect) or elsewhere (one MOVED). One row per master; their mean is what a name
# chosen at random costs.
ts=$(q "--url=$S_URL") tm=$(q "--url=$M_URL") tc=$(q "--url=$C_URL")
bench_interleaved t_s_exec "$RL $ts exec bench-t-s -- true" \
    t_m_exec "$RL $tm exec bench-t-m -- true" \
    t_c0_exec "$RL $tc exec $N0 -- true" \
    t_c1_exec "$RL $tc exec $N1 -- true" \
    t_c2_exec "$RL $tc exec $N2 -- true"
# every `lock` a fresh acquisition: an untimed --prepare frees the lock first
PREP["t_s_lock"]="$RL $ts unlock bench-t-s --force"
PREP["t_m_lock"]="$RL $tm unlock bench-t-m --force"
PREP["t_c0_lock"]="$RL $tc unlock $N0 --force"
PREP["t_c1_lock"]="$RL $tc unlock $N1 --force"
PREP["t_c2_lock"]="$RL $tc unlock $N2 --force"
bench_interleaved t_s_lock "$RL $ts lock bench-t-s --owner O" \
    t_m_lock "$RL $tm lock bench-t-m --owner O" \
    t_c0_lock "$RL $tc lock $N0 --owner O" \
    t_c1_lock "$RL $tc lock $N1 --owner O" \
    t_c2_lock "$RL $tc lock $N2 --owner O"

log "  hand-off, standalone and cluster"
declare -A T_HO T_HO_ROW
handoff rlock >"$TMP/handoff"
read -r ok med p90 worst note <"$TMP/handoff"
T_HO[s]=$med T_HO_ROW[s]="| standalone | $ok | $med | $p90 | $worst | $note |"
RLOCK_URL=$C_URL SUB_PORTS="$C0 $C1 $C2" handoff rlock >"$TMP/handoff"
read -r ok med p90 worst note <"$TMP/handoff"
T_HO[c]=$med T_HO_ROW[c]="| cluster (sharded pub/sub) | $ok | $med | $p90 | $worst | $note |"

# Failover: a holder's job runs under `exec` through Sentinel, a waiter is queued; the
# master is SIGKILLed and at the same moment the holder's job ends. The holder's release
# and the waiter follow the sentinels to the promoted replica; the figure is the time from
# the kill to the waiter's job's first instruction. Then the dead master comes back as a
# replica of the new one (as an operator's restart would), and the next round starts once
# every sentinel knows it again.
log "  sentinel failover, $FAILOVER_ROUNDS rounds"
declare -a FO_MS=()
FO_ERRS=0
replicated() { [[ $(t_cli "$1" WAIT 1 1000 2>/dev/null) == 1 ]]; }
master_port() { t_cli "$S0" SENTINEL GET-MASTER-ADDR-BY-NAME bm 2>/dev/null | sed -n 2p; }
all_name() {
    local p
    for p in $S0 $S1 $S2; do
        [[ $(t_cli "$p" SENTINEL GET-MASTER-ADDR-BY-NAME bm 2>/dev/null | sed -n 2p) == "$1" ]] || return 1
    done
    t_cli "$1" ROLE 2>/dev/null | head -n1 | grep -qx master
}
for ((round = 1; round <= FAILOVER_ROUNDS && T_OK; round++)); do
    old=$(master_port)
    new=$([[ $old == "$M0" ]] && echo "$M1" || echo "$M0")
    r=$T_DIR/fo-$round
    mkdir "$r" && mkfifo "$r/go"
    RLOCK_URL=$M_URL setsid "$RLOCK" --timeout 20s exec bench-t-fo -- sh -c "$HOLD_SH" sh \
        "$r/held" "$r/go" "$STAMP" "$r/end" >"$r/holder.out" 2>"$r/holder.err" &
    hp=$!
    until_true 10 test -e "$r/held"
    RLOCK_URL=$M_URL setsid "$RLOCK" --timeout 20s exec --wait 60s bench-t-fo -- "$STAMP" \
        >"$r/start" 2>"$r/waiter.err" &
    wp=$!
    JOB_PIDS=("$hp" "$wp")
    SUB_PORTS=$old until_true 10 rlock_subscribed bench-t-fo
    # the queue entry and the hold are on the replica before the master dies (a replica
    # restarted in the round before may still be syncing): this part measures a failover
    # that keeps the lock; losing an unreplicated one is the test suite's business
    until_true 10 replicated "$old"
    t0=$("$STAMP")
    eval "kill -KILL \$T_PID_$old"
    go_fifo "$r/go"
    arm_guard "$wp" 60
    await_pid "$wp"
    ws=$?
    wait_pid "$hp" 30
    hs=$?
    JOB_PIDS=()
    start=$(head -n1 "$r/start" 2>/dev/null)
    if ((ws != 0 || hs != 0)) || [[ ! $start =~ ^[0-9]+$ ]]; then
        FO_ERRS=$((FO_ERRS + 1))
        { printf 'failover round %d: holder exit %d, waiter exit %d\n' "$round" "$hs" "$ws"; cat "$r/holder.err" "$r/waiter.err"; } >>"$LOG"
    else
        FO_MS+=("$(((start - t0) / 1000000))")
    fi
    # the old master back, as a replica of the new one
    until_true 20 all_name "$new" || { T_OK=0; break; }
    t_server "$old" --replicaof 127.0.0.1 "$new"
    until_true 10 t_up "$old"
    until_true 30 sentinels_ready || { T_OK=0; break; }
done
read -r FO_MED FO_MIN FO_MAX < <(python3 -c 'import statistics, sys
v = [int(x) for x in sys.argv[1:]]
print(statistics.median(v), min(v), max(v)) if v else print("", "", "")' "${FO_MS[@]}")
stop_topologies

t_mean() { calc '%.3f' "($(hstat "${1}0_$2" median) + $(hstat "${1}1_$2" median) + $(hstat "${1}2_$2" median)) / 3"; }
T_C_EXEC=$(t_mean t_c exec) T_C_LOCK=$(t_mean t_c lock)
T_S_EXEC=$(hstat t_s_exec median) T_M_EXEC=$(hstat t_m_exec median)
T_S_LOCK=$(hstat t_s_lock median) T_M_LOCK=$(hstat t_m_lock median)

say "## T. Topologies: standalone, Sentinel, Cluster"
say ""
say "Per process, one process per run (hyperfine, medians in ms). The cluster has 3 masters;"
say "\`Cn\` is a name that master n serves; rlock sends a process's first request to the"
say "first seed (C0), so a name on C1 or C2 costs one \`MOVED\` and one more connection."
say ""
say "| command | standalone | sentinel | vs standalone | cluster C0 / C1 / C2 | cluster mean | vs standalone |"
say "|---|---:|---:|---:|---:|---:|---:|"
say "| \`exec NAME -- true\` | $T_S_EXEC | $T_M_EXEC | $(calc '%.2fx' "$T_M_EXEC / $T_S_EXEC") | $(hstat t_c0_exec median) / $(hstat t_c1_exec median) / $(hstat t_c2_exec median) | $T_C_EXEC | $(calc '%.2fx' "$T_C_EXEC / $T_S_EXEC") |"
say "| \`lock NAME\` | $T_S_LOCK | $T_M_LOCK | $(calc '%.2fx' "$T_M_LOCK / $T_S_LOCK") | $(hstat t_c0_lock median) / $(hstat t_c1_lock median) / $(hstat t_c2_lock median) | $T_C_LOCK | $(calc '%.2fx' "$T_C_LOCK / $T_S_LOCK") |"
say ""
say "Hand-off as in part C ($ROUNDS rounds, ms):"
say ""
say "| where | rounds | median | p90 | worst | notes |"
say "|---|---:|---:|---:|---:|---|"
say "${T_HO_ROW[s]}"
say "${T_HO_ROW[c]}"
say ""
say "Sentinel failover (SIGKILL of the master, down-after-milliseconds 1000): from the kill"
say "to the queued waiter's job start, $FAILOVER_ROUNDS rounds: median ${FO_MED:-?} ms"
say "(min ${FO_MIN:-?}, max ${FO_MAX:-?}; ${#FO_MS[@]} rounds measured, $FO_ERRS failed)."
say ""
