# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# A hand-off along a queue of N waiters, shared by part W (queue lengths) and part P
# (pools). Sourced by run.sh after bench/lib.sh. One holder, N waiters queued behind it,
# each running a 20 ms job that stamps its start and its end; the first QUEUE_HANDOFFS
# hand-offs are timed (gap = a job's start - the previous job's end) and Redis's CPU
# (INFO cpu) over them is divided by their number.
QUEUE_HANDOFFS=$(knob BENCH_QUEUE_HANDOFFS 50 5 1000)
# The job: its start and its end, each by the static stamp, 20 ms apart.
QJOB='"$1" >> "$2/starts"; sleep 0.02; "$1" >> "$2/ends"'
# The holder's job: held until the fifo says go, then its end.
QHOLD='printf held > "$2/held"; read -r _ < "$2/go"; "$1" >> "$2/ends"'

redis_cpu() { # used_cpu_sys + used_cpu_user of the bench's redis-server, seconds
    rcli INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'
}
lines() { if [[ -f $1 ]]; then wc -l <"$1"; else echo 0; fi; }
# flock_blocked FILE: processes blocked on FILE's flock (the "->" lines of /proc/locks)
flock_blocked() {
    local ino
    ino=$(stat -c %i "$1")
    grep -c -- "-> FLOCK .*:$ino " /proc/locks
}

# queue_chain TOOL N: prints "handoffs median p90 cpu_us_per_handoff notes". TOOL: rlock
# (one lock), pool (`exec --one-of` a pool of 3: the holder's member is handed along the
# queue, the other two stay held by `rlock lock` throughout, so every waiter is queued on
# all 3 and each hand-off claims one member and leaves the other two queues) or flock.
queue_chain() {
    local tool=$1 n=$2 d=$TMP/w-$1-$2 name=bench-w-$1-$2 i pid hp t0 c0 c1 want
    local -a pids=() waiter
    mkdir -p "$d" && mkfifo "$d/go"
    want=$((QUEUE_HANDOFFS < n ? QUEUE_HANDOFFS : n))
    case $tool in
    rlock)
        setsid "$RLOCK" exec "$name" -- sh -c "$QHOLD" sh "$STAMP" "$d" 2>>"$LOG" &
        waiter=("$RLOCK" exec --wait 600s "$name" --)
        ;;
    pool)
        "$RLOCK" lock "$name-2" "$name-3" --owner bench-p --lease 600s >/dev/null 2>>"$LOG"
        setsid "$RLOCK" exec "$name" -- sh -c "$QHOLD" sh "$STAMP" "$d" 2>>"$LOG" &
        waiter=("$RLOCK" exec --wait 600s --one-of "$name" "$name-2" "$name-3" --)
        ;;
    flock)
        setsid flock "$d/lock" sh -c "$QHOLD" sh "$STAMP" "$d" 2>>"$LOG" &
        waiter=(flock "$d/lock")
        ;;
    esac
    hp=$!
    JOB_PIDS=("$hp")
    until_true 10 test -e "$d/held" || { echo "0 - - - holder never ran"; return; }
    for ((i = 0; i < n; i++)); do
        setsid "${waiter[@]}" sh -c "$QJOB" sh "$STAMP" "$d" 2>>"$LOG" &
        pids+=($!)
        JOB_PIDS+=($!)
    done
    # All N queued (rlock: N entries in the lock's queue, each subscribed before it queued;
    # flock: N blocked in the kernel) before the holder lets go.
    case $tool in
    rlock | pool) until_true 120 eval '(($(rcli ZCARD "rlock:lock:{$name}:waiters") >= n))' ;;
    flock) until_true 120 eval '(($(flock_blocked "$d/lock") >= n))' ;;
    esac || log "  W $tool $n: not all $n waiters queued in 120 s"
    sleep 0.5
    c0=$(redis_cpu)
    go_fifo "$d/go"
    t0=$SECONDS
    until_true 120 eval '(($(lines "$d/starts") >= want))'
    c1=$(redis_cpu)
    # The rest leave their queue (TERM: an rlock waiter's clean-up leaves Redis's queue).
    for pid in "${JOB_PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
    for pid in "${JOB_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    JOB_PIDS=()
    [[ $tool == pool ]] && "$RLOCK" unlock "$name-2" "$name-3" --owner bench-p >/dev/null 2>>"$LOG"
    python3 - "$d/starts" "$d/ends" "$want" "$c0" "$c1" "$tool" <<'EOF'
import statistics, sys
starts = [int(x) for x in open(sys.argv[1]).read().split()]
ends = [int(x) for x in open(sys.argv[2]).read().split()]
want, c0, c1, tool = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
# ends[0] is the holder's; job k (starts[k]) follows ends[k].
gaps = sorted((starts[k] - ends[k]) / 1e6 for k in range(min(want, len(starts), len(ends))))
if not gaps:
    print(0, "-", "-", "-", "no hand-off")
    sys.exit()
p90 = gaps[min(len(gaps) - 1, int(0.9 * len(gaps)))]
cpu = "%.0f" % ((c1 - c0) * 1e6 / len(gaps)) if tool != "flock" else "-"
bad = sum(1 for g in gaps if g < 0)
print(len(gaps), "%.2f" % statistics.median(gaps), "%.2f" % p90, cpu,
      f"{bad} overlaps" if bad else "-")
EOF
    rm -rf "$d"
}

