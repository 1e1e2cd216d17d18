# shellcheck shell=bash disable=SC2016,SC2034,SC2153,SC2317
# bench/run.sh part D, sourced by run.sh when BENCH_PARTS names it: it uses the
# servers, knobs and helpers run.sh and bench/lib.sh set up (see bench/README.md).
# rss KEY PREP CMD...: run function PREP (if any, untimed) before each run; peak RSS (KiB, GNU time %M) over RSS_RUNS runs -> "median max" in MiB
rss() {
    local key=$1 prep=$2 i kib
    shift 2
    local -a vals=()
    for ((i = 0; i < RSS_RUNS; i++)); do
        [[ -n $prep ]] && "$prep" >/dev/null 2>&1
        if /usr/bin/time -f %M -o "$TMP/rss" "$@" >/dev/null 2>>"$LOG"; then
            kib=$(tail -n1 "$TMP/rss")
            [[ $kib =~ ^[0-9]+$ ]] && vals+=("$kib")
        else
            printf 'rss %s: exit %s\n' "$key" "$?" >>"$LOG"
        fi
    done
    python3 -c 'import statistics, sys
v = sorted(int(x) for x in sys.argv[1:])
print("%.2f %.2f %d" % (statistics.median(v) / 1024, v[-1] / 1024, len(v)) if v else "error error 0")' "${vals[@]}"
}

log "D: peak RSS"
say "## D. Peak RSS (GNU time %M, MiB; the largest of the process and its children)"
say ""
say "| command | median | max | runs |"
say "|---|---:|---:|---:|"
declare -A RSS_MAX
rss_row() {
    local label=$1 key=$2 prep=$3 med max n
    shift 3
    read -r med max n <<<"$(rss "$key" "$prep" "$@")"
    RSS_MAX[$key]=$max
    say "| $label | ${med:-error} | ${max:-error} | ${n:-0} |"
}
rss_row 'rlock exec L -- true' r_exec '' "$RLOCK" exec bench-d -- true
rss_row 'rlock exec L -- sleep 0.2 (holding, renewing)' r_hold '' "$RLOCK" exec bench-d -- sleep 0.2
prep_free_d2() { "$RLOCK" unlock bench-d2 --force; }
prep_del_k() { rcli DEL bench-d-k; }
rss_row 'rlock lock L --owner O' r_lock prep_free_d2 "$RLOCK" lock bench-d2 --owner bench-owner
rss_row 'etcdctl lock L true' e_lock '' etcdctl --endpoints="$ETCD_EP" lock bench-d true
rss_row 'redis-cli SET k v NX PX 30000' r_set prep_del_k redis-cli -h 127.0.0.1 -p "$REDIS_PORT" SET bench-d-k v NX PX 30000
rss_row 'flock FILE true' f_lock '' flock "$TMP/d.lock" true
rss_row 'flock FILE sleep 0.2' f_hold '' flock "$TMP/d.lock" sleep 0.2
say ""
