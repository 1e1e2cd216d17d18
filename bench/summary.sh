# shellcheck shell=bash disable=SC2016,SC2034,SC2317
# bench/run.sh summary, sourced last: one verdict row per target of the parts that ran.
# verdict LABEL VALUE_EXPR LIMIT_EXPR SHOWN
verdict() {
    local label=$1 value=$2 limit=$3 shown=$4 ok
    ok=$(calc '%s' "'PASS' if ($value) <= ($limit) else 'FAIL'")
    say "| $label | $shown | ${ok:-FAIL (no data)} |"
}
ra=$(hstat a_rlock median) fa=$(hstat a_flock median) rsem=$(hstat a_rlock_sem median)
rsh=$(hstat a_rlock_shared median)
rl=$(hstat b_rlock_lock median) rs=$(hstat b_set median)
say "## Summary against targets (parts $PARTS)"
say ""
say "| target | measured | verdict |"
say "|---|---|---|"
part A && verdict 'rlock exec NAME -- true <= 1.5x flock FILE true' "$ra / $fa" 1.5 \
    "$(calc '%.2f' "$ra") ms vs $(calc '%.2f' "$fa") ms = $(calc '%.2fx' "$ra / $fa")"
part A && verdict 'rlock sem exec NAME -- true <= 1.5x flock FILE true' "$rsem / $fa" 1.5 \
    "$(calc '%.2f' "$rsem") ms vs $(calc '%.2f' "$fa") ms = $(calc '%.2fx' "$rsem / $fa")"
part B && verdict 'rlock lock <= 0.8x redis-cli SET' "$rl / $rs" 0.8 \
    "$(calc '%.2f' "$rl") ms vs $(calc '%.2f' "$rs") ms = $(calc '%.2fx' "$rl / $rs")"
part C && verdict 'rlock hand-off median <= 2 ms' "${HO_MED[rlock]}" 2 "${HO_MED[rlock]:-?} ms"
part C && verdict "rlock hand-off median <= 1.5x flock's in the same run" \
    "${HO_MED[rlock]} / ${HO_MED[flock]}" 1.5 \
    "${HO_MED[rlock]:-?} ms vs ${HO_MED[flock]:-?} ms = $(calc '%.2fx' "${HO_MED[rlock]} / ${HO_MED[flock]}")"
part C && verdict 'rlock hand-off worst <= 10 ms' "${HO_MAX[rlock]}" 10 "${HO_MAX[rlock]:-?} ms"
part A && verdict 'rlock exec --shared NAME -- true <= 1.5x flock FILE true' "$rsh / $fa" 1.5 \
    "$(calc '%.2f' "$rsh") ms vs $(calc '%.2f' "$fa") ms = $(calc '%.2fx' "$rsh / $fa")"
part C && verdict 'reader hand-off median <= 2 ms' "${HO_MED[shared]}" 2 "${HO_MED[shared]:-?} ms"
part C && verdict 'reader hand-off worst <= 10 ms' "${HO_MAX[shared]}" 10 "${HO_MAX[shared]:-?} ms"
part C && verdict 'permit hand-off median <= 2 ms' "${HO_MED[sem]}" 2 "${HO_MED[sem]:-?} ms"
part C && verdict 'permit hand-off worst <= 10 ms' "${HO_MAX[sem]}" 10 "${HO_MAX[sem]:-?} ms"
part E && verdict 'rlock latch await wake-up median <= 2 ms' "$LW_MED" 2 "${LW_MED:-?} ms"
part D && verdict 'rlock exec peak RSS <= 5 MiB (max of both exec rows)' \
    "max(${RSS_MAX[r_exec]}, ${RSS_MAX[r_hold]})" 5 \
    "$(calc '%.2f' "max(${RSS_MAX[r_exec]}, ${RSS_MAX[r_hold]})") MiB"
if part G; then
    verdict 'limiter decisions/s through Topology >= 0.9x redis-benchmark EVALSHA' \
        "0.9 * $G_RB_MED" "$G_CPP_MED" \
        "${G_CPP_MED:-?} vs ${G_RB_MED:-?} = $(calc '%.2fx' "$G_CPP_MED / $G_RB_MED")"
    gl=$(hstat g_limit median) gk=$(hstat g_lock median)
    verdict 'rlock limit <= 1.1x rlock lock (one process each)' "$gl / $gk" 1.1 \
        "$(calc '%.2f' "$gl") ms vs $(calc '%.2f' "$gk") ms = $(calc '%.2fx' "$gl / $gk")"
fi
if part F; then
    for count in 100000 "$INSPECT_MAX"; do
        verdict "rlock inspect peak RSS <= 16 MiB at $count objects (JSON, table)" \
            "max(${INSPECT_RSS[$count.json]:-x}, ${INSPECT_RSS[$count.table]:-x})" 16 \
            "${INSPECT_RSS[$count.json]:-?} / ${INSPECT_RSS[$count.table]:-?} MiB"
    done
    verdict 'rlock inspect of 100,000 locks <= the old listing, side by side' \
        "${SIDE_S[new]:-x}" "${SIDE_S[old]:-x}" "${SIDE_S[new]:-?} s vs ${SIDE_S[old]:-?} s"
fi
part H && verdict 'delay-push --lines >= 0.5x redis-benchmark -P 64 of its script' \
    "0.5" "$PUSH_RATIO" "${PUSH_RATIO:-?}x"
part H && verdict 'delivery lateness p99 at 1,000 items/s < 50 ms' "$LATE_P99" 49 "${LATE_P99:-?} ms"
if part I; then
    verdict "busy CPUs: rlock hand-off median <= 2x flock's under the same load" \
        "${BUSY_MED[rlock]} / ${BUSY_MED[flock]}" 2 \
        "${BUSY_MED[rlock]:-?} ms vs ${BUSY_MED[flock]:-?} ms = $(calc '%.2fx' "${BUSY_MED[rlock]} / ${BUSY_MED[flock]}")"
    for st in median p99; do
        il=$(hstat i_lock $st) iu=$(hstat i_unlock $st)
        verdict "busy CPUs: unlock <= 3x lock ($st)" "$iu / $il" 3 \
            "$(calc '%.2f' "$iu") ms vs $(calc '%.2f' "$il") ms = $(calc '%.2fx' "$iu / $il")"
    done
fi
if part T; then
    for row in "exec NAME -- true:EXEC" "lock NAME:LOCK"; do
        label=${row%%:*} k=${row#*:}
        s=T_S_$k m=T_M_$k c=T_C_$k
        verdict "sentinel: \`$label\` per process <= 1.2x standalone" "${!m} / ${!s}" 1.2 \
            "${!m:-?} ms vs ${!s:-?} ms = $(calc '%.2fx' "${!m} / ${!s}")"
        verdict "cluster (mean of 3 masters): \`$label\` per process <= 1.2x standalone" \
            "${!c} / ${!s}" 1.2 "${!c:-?} ms vs ${!s:-?} ms = $(calc '%.2fx' "${!c} / ${!s}")"
    done
    verdict 'cluster hand-off median (sharded pub/sub) <= 1.2x standalone' \
        "${T_HO[c]} / ${T_HO[s]}" 1.2 \
        "${T_HO[c]:-?} ms vs ${T_HO[s]:-?} ms = $(calc '%.2fx' "${T_HO[c]} / ${T_HO[s]}")"
    say "| sentinel failover, master SIGKILLed -> waiter's job starts (median of $FAILOVER_ROUNDS; no target) | ${FO_MED:-?} ms | - |"
fi
if part M; then
    ml1=$(hstat m_lock1 median) ml2=$(hstat m_lock2 median)
    verdict 'rlock lock A B <= 1.2x rlock lock A (one server)' "$ml2 / $ml1" 1.2 \
        "$(calc '%.2f' "$ml2") ms vs $(calc '%.2f' "$ml1") ms = $(calc '%.2fx' "$ml2 / $ml1")"
    verdict 'hand-off median, two names <= 1.2x one name' "${M_HO[multi]} / ${M_HO[rlock]}" 1.2 \
        "${M_HO[multi]:-?} ms vs ${M_HO[rlock]:-?} ms = $(calc '%.2fx' "${M_HO[multi]} / ${M_HO[rlock]}")"
fi
if part P; then
    verdict 'pool hand-off (3 members, 20 waiters) <= 1.2x a single lock'"'"'s' \
        "${PO_MED[pool]} / ${PO_MED[rlock]}" 1.2 \
        "${PO_MED[pool]:-?} ms vs ${PO_MED[rlock]:-?} ms = $(calc '%.2fx' "${PO_MED[pool]} / ${PO_MED[rlock]}")"
fi
part S && verdict 'supersede: newest arrival -> older waiter exit, median < 50 ms' "$SUP_MED" 50 \
    "${SUP_MED:-?} ms over ${SUP_OK:-?} runs"
part O && verdict 'exec --once-per: at most 1 request more than exec' "$O_REQ_ONCE - $O_REQ_PLAIN" 1 \
    "${O_REQ_ONCE:-?} vs ${O_REQ_PLAIN:-?} requests a run"
if part W && [[ -n ${QW_MED[10]:-} && -n ${QW_MED[1000]:-} ]]; then
    verdict 'at 1000 waiters: hand-off gap median <= 1.3x at 10' "${QW_MED[1000]} / ${QW_MED[10]}" 1.3 \
        "${QW_MED[1000]} ms vs ${QW_MED[10]} ms = $(calc '%.2fx' "${QW_MED[1000]} / ${QW_MED[10]}")"
    verdict 'at 1000 waiters: Redis CPU per hand-off <= 1.3x at 10' "${QW_CPU[1000]} / ${QW_CPU[10]}" 1.3 \
        "${QW_CPU[1000]} us vs ${QW_CPU[10]} us = $(calc '%.2fx' "${QW_CPU[1000]} / ${QW_CPU[10]}")"
fi
say ""
say "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)."
say "Raw data: bench/out/*.json (hyperfine), bench/out/bench.log (tool output)."
log "report written to $REPORT"
exit 0
