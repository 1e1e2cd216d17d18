# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part H, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# Delayed queues. H1: `rlock delay-push --lines` of QUEUE_ITEMS items (due in
# an hour, so nothing is consumed) against the ceiling: redis-benchmark -P 64
# running EVALSHA of the same push script (its SHA taken from MONITOR while
# rlock pushes one item), with random ids. H2: delivery lateness at 1,000
# items/s sustained: 10,000 items due 1 ms apart (pushed beforehand through the
# push script with redis-cli --pipe, absolute due times on the server clock),
# taken by one `delay-pop --forever`; lateness_ms is the server's (delivery - due).
QUEUE_ITEMS=$(knob BENCH_QUEUE_ITEMS 100000 1000 1000000)
seq -f 'item-%06g' "$QUEUE_ITEMS" >"$TMP/lines"
# qkeys QUEUE: the KEYS every queue script takes (lua/include/queue_common.lua), in order
qkeys() {
    local t="{$1}"
    echo "rlock:queue:$t rlock:queue:$t:sched rlock:queue:$t:items rlock:queue:$t:meta" \
        "rlock:queue:$t:inflight rlock:queue:$t:leases rlock:queue:$t:dead" \
        "rlock:queue:$t:finished"
}
QKEYS_N=8
# shellcheck disable=SC2046
qdel() { rcli DEL $(qkeys "$1") >/dev/null; }

log "H: delay-push --lines of $QUEUE_ITEMS items, and the redis-benchmark ceiling"
# line-buffered: the TERM below ends redis-cli before it would flush a full buffer
timeout 5 stdbuf -oL redis-cli -h 127.0.0.1 -p "$REDIS_PORT" MONITOR >"$TMP/monitor" 2>/dev/null &
MON=$!
until_true 5 grep -q OK "$TMP/monitor"
"$RLOCK" -q delay-push bench-sha x --delay 1h >>"$LOG" 2>&1
sleep 0.2
kill "$MON" 2>/dev/null
wait "$MON" 2>/dev/null
PUSH_SHA=$(grep -o '"EVALSHA" "[0-9a-f]*"' "$TMP/monitor" | head -n1 | cut -d'"' -f4)
qdel bench-sha

start=$("$STAMP")
"$RLOCK" delay-push bench-push --lines --delay 1h <"$TMP/lines" >"$TMP/pushed" 2>>"$LOG"
end=$("$STAMP")
pushed=$(grep -c '"duplicate":false' "$TMP/pushed")
PUSH_RATE=$(calc '%.0f' "$pushed / (($end - $start) / 1e9)")
PUSH_SECS=$(calc '%.2f' "($end - $start) / 1e9")
qdel bench-push
CEIL_RATE=error CEIL_ITEMS=0
if [[ -n $PUSH_SHA ]]; then
    # shellcheck disable=SC2046
    CEIL_RATE=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -P 64 -n "$QUEUE_ITEMS" \
        -r 1000000000 --csv EVALSHA "$PUSH_SHA" "$QKEYS_N" $(qkeys bench-ceil) \
        "rlock:chan:{bench-ceil}:queue" delay 3600000 'id-__rand_int__' item-000000 \
        2>>"$LOG" | tail -n1 | cut -d'"' -f4)
    CEIL_ITEMS=$(rcli HLEN "rlock:queue:{bench-ceil}:meta")
    qdel bench-ceil
fi
PUSH_RATIO=$(calc '%.2f' "$PUSH_RATE / $CEIL_RATE")

log "H: lateness of 10,000 items due 1 ms apart (1,000 items/s)"
read -r now_s now_us < <(rcli TIME | tr '\n' ' ')
first_due=$((now_s * 1000 + now_us / 1000 + 3000))
# shellcheck disable=SC2046
python3 -c 'import sys
sha, first, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for i in range(10000):
    args = ["EVALSHA", sha, str(len(keys)), *keys, "rlock:chan:{bench-late}:queue", "at",
            str(first + i), "late-%05d" % i, "x"]
    sys.stdout.write("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args))' \
    "$PUSH_SHA" "$first_due" $(qkeys bench-late) >"$TMP/late.resp"
"$RLOCK" delay-pop bench-late --forever --count 100 >"$TMP/late.out" 2>>"$LOG" &
POP=$!
rcli --pipe <"$TMP/late.resp" >>"$LOG" 2>&1
until_true 60 test "$(wc -l <"$TMP/late.out")" -ge 10000
kill -TERM "$POP" 2>/dev/null
wait "$POP" 2>/dev/null
read -r LATE_N LATE_P50 LATE_P99 LATE_MAX < <(python3 -c 'import json, sys
l = sorted(json.loads(x)["lateness_ms"] for x in open(sys.argv[1]))
print(len(l), l[len(l) // 2], l[len(l) * 99 // 100], l[-1]) if l else print(0, "error", "error", "error")' "$TMP/late.out")
qdel bench-late

say "## H. Delayed queues"
say ""
say "| bulk push of $QUEUE_ITEMS items | items/s | vs ceiling |"
say "|---|---:|---:|"
say "| \`rlock delay-push --lines\` (512 EVALSHA per round trip, $PUSH_SECS s) | $PUSH_RATE | ${PUSH_RATIO}x |"
say "| \`redis-benchmark -P 64\` EVALSHA of the push script (ceiling; $CEIL_ITEMS ids stored) | $CEIL_RATE | 1.00x |"
say ""
say "| delivery lateness: 10,000 items due 1 ms apart, one \`delay-pop --forever --count 100\` | items | p50 ms | p99 ms | worst ms |"
say "|---|---:|---:|---:|---:|"
say "| server-side lateness_ms | $LATE_N | $LATE_P50 | $LATE_P99 | $LATE_MAX |"
say ""
