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

# queue_chain TOOL N: prints "handoffs median p90 cpu_us_per_handoff notes".
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
    rlock) until_true 120 eval '(($(rcli ZCARD "rlock:lock:{$name}:waiters") >= n))' ;;
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
cpu = "%.0f" % ((c1 - c0) * 1e6 / len(gaps)) if tool == "rlock" else "-"
bad = sum(1 for g in gaps if g < 0)
print(len(gaps), "%.2f" % statistics.median(gaps), "%.2f" % p90, cpu,
      f"{bad} overlaps" if bad else "-")
EOF
    rm -rf "$d"
}

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
