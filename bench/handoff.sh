# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# The hand-off measurement of bench/run.sh, shared by part C (idle), part I (busy CPUs)
# and part T (a cluster): handoff TOOL runs ROUNDS rounds of one holder and one blocked
# waiter. Sourced by run.sh after bench/lib.sh.
# The holder's child marks that it runs (so the lock is held), waits for the
# go-signal on a fifo, then execs stamp > end and exits. The waiter's child is
# stamp > start. Hand-off = start - end.
HOLD_SH='printf held > "$1"; read -r _ < "$2"; exec "$3" > "$4"'

alive() { kill -0 "$1" 2>/dev/null; }
# wait_pid PID SECONDS: wait for a job to end, kill its group after SECONDS
wait_pid() {
    local pid=$1 deadline=$((SECONDS + $2))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.01; done
    if alive "$pid"; then
        kill -TERM -- "-$pid" 2>/dev/null
        sleep 0.2
        kill -KILL -- "-$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
}
# until_true SECONDS CMD...: poll CMD every 10 ms
# While a hand-off is measured the harness starts no process (a fork and exec here take a
# CPU from the 2 the hand-off needs): arm_guard, before it, starts the timer that kills a
# job that hangs; await_pid then blocks in `wait`, and go_fifo writes with a builtin.
# arm_guard PID SECONDS: kill PID's process group after SECONDS (GUARD: the timer's pid).
arm_guard() {
    (
        trap 'kill "$sp" 2>/dev/null; exit 0' TERM
        sleep "$2" &
        sp=$!
        wait "$sp"
        kill -TERM -- "-$1" 2>/dev/null
        sleep 0.2
        kill -KILL -- "-$1" 2>/dev/null
    ) &
    GUARD=$!
}
# await_pid PID: PID's exit status, once it has exited; disarms the guard.
await_pid() {
    local s=0
    wait "$1" 2>/dev/null || s=$?
    kill -TERM "$GUARD" 2>/dev/null
    wait "$GUARD" 2>/dev/null
    return "$s"
}
# go_fifo FIFO: write "go" to a FIFO whose reader waits (an O_RDWR open never blocks).
go_fifo() { { printf 'go\n' >&9; } 9<>"$1"; }
rlock_subscribed() { subscribed "rlock:chan:{$1}:${2:-lock}"; }
etcd_queued() { (($(ectl get --prefix --keys-only "$1/" 2>/dev/null | grep -c .) >= 2)); }

# handoff TOOL: ROUNDS rounds; prints "ok median p90 worst notes".
# Runs in the current shell (call it with a redirection, not in $(...)), so
# that the EXIT trap knows the pids of the jobs it started.
handoff() {
    local tool=$1 i r hp wp hs ws ok=0 errs=0 unblocked=0 overlap=0 start end t0=$SECONDS
    local name=bench-c-$tool lockfile=$TMP/c.lock
    local -a ns=() holder waiter
    case $tool in
    rlock)
        holder=("$RLOCK" exec "$name" --)
        waiter=("$RLOCK" exec --wait 30s "$name" -- "$STAMP")
        ;;
    shared)
        # a writer hands the lock to a reader
        holder=("$RLOCK" exec "$name" --)
        waiter=("$RLOCK" exec --shared --wait 30s "$name" -- "$STAMP")
        ;;
    multi)
        # two names as one (MultiLock): the waiter queues on the first in sorted order,
        # $name, and takes $name-2 once it has that
        holder=("$RLOCK" exec "$name" "$name-2" --)
        waiter=("$RLOCK" exec --wait 30s "$name" "$name-2" -- "$STAMP")
        ;;
    sem)
        # one permit: the freed permit is handed to the waiter, as a lock is
        holder=("$RLOCK" sem exec --permits 1 "$name" --)
        waiter=("$RLOCK" sem exec --permits 1 --wait 30s "$name" -- "$STAMP")
        ;;
    flock)
        holder=(flock "$lockfile")
        waiter=(flock "$lockfile" "$STAMP")
        ;;
    etcd)
        holder=(etcdctl --endpoints="$ETCD_EP" lock "$name" --)
        waiter=(etcdctl --endpoints="$ETCD_EP" lock "$name" "$STAMP")
        ;;
    esac
    for ((i = 1; i <= ROUNDS; i++)); do
        ((SECONDS - t0 > BUDGET)) && break
        r=$TMP/c-$tool-$i
        mkdir "$r" && mkfifo "$r/go"
        # setsid on a simple command: $! is the job's pid and its process group id
        setsid "${holder[@]}" sh -c "$HOLD_SH" sh "$r/held" "$r/go" "$STAMP" "$r/end" \
            >"$r/holder.out" 2>"$r/holder.err" &
        hp=$!
        JOB_PIDS=("$hp")
        if ! until_true 10 test -e "$r/held"; then
            errs=$((errs + 1))
            { printf '%s round %d: holder never ran\n' "$tool" "$i"; cat "$r/holder.err"; } >>"$LOG"
            wait_pid "$hp" 1
            JOB_PIDS=()
            continue
        fi
        setsid "${waiter[@]}" >"$r/start" 2>"$r/waiter.err" &
        wp=$!
        JOB_PIDS+=("$wp")
        arm_guard "$wp" 40
        # make sure the waiter is really blocked before the holder lets go
        case $tool in
        rlock | shared | multi) if until_true 10 rlock_subscribed "$name"; then sleep 0.05; else sleep 0.2; fi ;;
        sem) if until_true 10 rlock_subscribed "$name" sem; then sleep 0.05; else sleep 0.2; fi ;;
        flock) sleep 0.2 ;;
        etcd) if until_true 10 etcd_queued "$name"; then sleep 0.05; else sleep 0.2; fi ;;
        esac
        if [[ -s $r/start ]] || ! alive "$wp"; then
            unblocked=$((unblocked + 1)) # the waiter got in while the lock was held, or died
        fi
        go_fifo "$r/go"
        await_pid "$wp"
        ws=$?
        wait_pid "$hp" 10
        hs=$?
        JOB_PIDS=()
        start=$(head -n1 "$r/start" 2>/dev/null) end=$(head -n1 "$r/end" 2>/dev/null)
        if ((hs != 0 || ws != 0)) || [[ ! $start =~ ^[0-9]+$ || ! $end =~ ^[0-9]+$ ]]; then
            errs=$((errs + 1))
            {
                printf '%s round %d: holder exit %d, waiter exit %d\n' "$tool" "$i" "$hs" "$ws"
                cat "$r/holder.err" "$r/waiter.err"
            } >>"$LOG"
            continue
        fi
        ((start < end)) && overlap=$((overlap + 1))
        ns+=($((start - end)))
        ok=$((ok + 1))
        rm -rf "$r"
    done
    python3 - "$ok" "$errs" "$unblocked" "$overlap" "${ns[@]}" <<'EOF'
import statistics, sys
ok, errs, unblocked, overlap = map(int, sys.argv[1:5])
ms = sorted(int(x) / 1e6 for x in sys.argv[5:])
notes = []
if errs: notes.append(f"{errs} failed rounds")
if unblocked: notes.append(f"{unblocked} waiters not blocked")
if overlap: notes.append(f"{overlap} overlaps")
note = ", ".join(notes) or "-"
if not ms:
    print(ok, "", "", "", note)
else:
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    print(ok, "%.2f" % statistics.median(ms), "%.2f" % p90, "%.2f" % ms[-1], note)
EOF
}
