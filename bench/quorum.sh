#!/usr/bin/env bash
# What a quorum (redis-quorum://) costs against one server, in one run on the same
# throwaway redis-servers: `rlock lock` (a fresh acquisition; an untimed `unlock --force`
# before each run) on one server, a 3-member and a 5-member quorum (hyperfine, one process
# per acquisition); the hand-off (unlock -> a queued waiter holds it and exits) on one server
# and on a 3-member quorum; node-redlock 4.2.0's acquisition on the same 3 and 5
# members (in one node process: no process start, see bench/redlock/acquire.js); and
# bench/quorum_floor.c's connect-PING-exit on one server and on the 5 members, and the
# same client sending rlock's own requests instead (the scripts floor); and the servers'
# CPU time per process for a lock on one server and on 5, and for the floor.
# Usage: RLOCK_BIN=build/rlock bench/quorum.sh   (BENCH_RUNS, default 100; BENCH_WARMUP,
# 10; BENCH_PASSES, 8; BENCH_HANDOFF_ROUNDS, 30). Every server listens on 127.0.0.1 only and is stopped by
# pid on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RLOCK_BIN=$(readlink -f -- "${RLOCK_BIN:-$ROOT/build/rlock}")
RUNS=${BENCH_RUNS:-100}
WARMUP=${BENCH_WARMUP:-10}
ROUNDS=${BENCH_HANDOFF_ROUNDS:-30}
for tool in redis-server redis-cli hyperfine python3 node npm cc; do
    command -v "$tool" >/dev/null || { echo "bench/quorum.sh: $tool is missing" >&2; exit 69; }
done

dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ports=()
for i in 0 1 2 3 4 5; do
    p=$(free_port)
    mkdir "$dir/$i"
    redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no --dir "$dir/$i" \
        --logfile "$dir/$i/redis.log" &
    pids+=($!)
    ports+=("$p")
done
for p in "${ports[@]}"; do
    for _ in $(seq 100); do redis-cli -p "$p" PING >/dev/null 2>&1 && break; sleep 0.05; done
done
single="redis://127.0.0.1:${ports[5]}"
q3="redis-quorum://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
q5="$q3,127.0.0.1:${ports[3]},127.0.0.1:${ports[4]}"
[ -d "$ROOT/bench/redlock/node_modules/redlock" ] ||
    npm ci --no-audit --no-fund --prefix "$ROOT/bench/redlock" >/dev/null

for url in "$single" "$q3" "$q5"; do  # fails loudly before hyperfine if broken
    "$RLOCK_BIN" --url "$url" lock bench-lock --owner o >/dev/null
    "$RLOCK_BIN" --url "$url" unlock bench-lock --force >/dev/null
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
lock() { echo "$RLOCK_BIN --url $1 lock bench-lock --owner o"; }
force() { echo "$RLOCK_BIN --url $1 unlock bench-lock --force"; }
# The three rows take turns in PASSES passes of RUNS/PASSES runs each, each pass starting
# with the next row: a VM's speed drifts from second to second, and rows measured one after
# the other came out up to 20% apart from one run of this script to the next (as
# bench/lib.sh's bench_interleaved, which this script does not source: it starts its own
# servers).
# Two more rows take their turns too: bench/quorum_floor.c, a client with no rlock in it
# that connects, PINGs and exits at a majority, on the one server and on the 5 members
# (its prepare, `true`, only keeps the rows alike): what five members cost any client here.
floor_bin="$dir/quorum_floor"
cc -O2 -static -o "$floor_bin" "$ROOT/bench/quorum_floor.c" 2>/dev/null ||
    cc -O2 -o "$floor_bin" "$ROOT/bench/quorum_floor.c"
# And the scripts floor: the same client sending, instead of PING, the very requests one
# `rlock lock` sends (captured with MONITOR on the single server and on a member), so that
# what the members' scripts cost shows apart from rlock's process around them.
python3 - "$RLOCK_BIN" "$dir" "$single" "${ports[5]}" "$q5" "${ports[0]}" <<'PY'
import re, subprocess, sys
rlock, out_dir, single, single_port, q5, member_port = sys.argv[1:7]
def unescape(text):  # MONITOR quotes arguments as sdscatrepr does
    plain = {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b"}
    out, i = bytearray(), 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode("latin-1")
            i += 1
        elif text[i + 1] == "x":
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        else:
            out += plain.get(text[i + 1], text[i + 1].encode("latin-1"))
            i += 2
    return bytes(out)
def capture(url, port, name):
    mon = subprocess.Popen(["redis-cli", "-p", port, "MONITOR"], stdout=subprocess.PIPE,
                           text=True, encoding="latin-1")
    assert mon.stdout.readline().strip() == "OK"
    run = lambda *a: subprocess.run([rlock, "--url", url, *a], check=True, capture_output=True)
    run("lock", "bench-lock", "--owner", "o")
    subprocess.run(["redis-cli", "-p", port, "PING"], check=True, capture_output=True)
    commands = []
    for line in mon.stdout:
        if re.match(r"[\d.]+ \[\d+ lua\]", line):
            continue  # what a script ran
        args = [unescape(a) for a in re.findall(r'"((?:[^"\\]|\\.)*)"', line)]
        if args[:1] == [b"PING"]:
            break
        commands.append(args)
    mon.kill()
    mon.wait()
    run("unlock", "bench-lock", "--force")
    with open(f"{out_dir}/{name}.resp", "wb") as f:
        for a in commands:
            f.write(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
    return ", ".join(a[0].decode() for a in commands)
print(f"scripts floor's requests: one server {capture(single, single_port, 'one')}; "
      f"a member {capture(q5, member_port, 'member')}")
PY
PASSES=${BENCH_PASSES:-8}
rows=("lock, one server" "$(force "$single")" "$(lock "$single")"
    "lock, quorum of 3" "$(force "$q3")" "$(lock "$q3")"
    "lock, quorum of 5" "$(force "$q5")" "$(lock "$q5")"
    "floor, one server" true "$floor_bin 1 ${ports[5]}"
    "floor, 5 members" true "$floor_bin 3 ${ports[*]:0:5}"
    "scripts floor, one server" "$(force "$single")" "$floor_bin -r $dir/one.resp 1 ${ports[5]}"
    "scripts floor, 5 members" "$(force "$q5")" "$floor_bin -r $dir/member.resp 3 ${ports[*]:0:5}")
nrows=$((${#rows[@]} / 3))
for ((pass = 0; pass < PASSES; pass++)); do
    args=()
    for ((k = 0; k < nrows; k++)); do
        i=$(((pass + k) % nrows * 3))
        args+=(-n "${rows[i]}" --prepare "${rows[i + 1]}" "${rows[i + 2]}")
    done
    hyperfine -N --warmup "$((pass == 0 ? WARMUP : 3))" --runs "$(((RUNS + PASSES - 1) / PASSES))" \
        --export-json "$dir/lock.$pass.json" "${args[@]}" >/dev/null
done
python3 - "$dir"/lock.*.json <<'PY'
import json, statistics, sys
times = {}
for f in sys.argv[1:]:
    for x in json.load(open(f))["results"]:
        times.setdefault(x["command"], []).extend(x["times"])
one = statistics.median(times["lock, one server"])
print(f"lock, one server: median {one*1000:.2f} ms over {len(times['lock, one server'])} runs")
for name in ("lock, quorum of 3", "lock, quorum of 5"):
    m = statistics.median(times[name])
    print(f"{name}: median {m*1000:.2f} ms = {m/one:.2f}x one server's {one*1000:.2f} ms")
f1, f5 = (statistics.median(times[n]) for n in ("floor, one server", "floor, 5 members"))
q5 = statistics.median(times["lock, quorum of 5"])
print(f"floor (quorum_floor.c: connect, PING, exit at a majority): one server {f1*1000:.2f} ms, "
      f"5 members {f5*1000:.2f} ms: +{(f5-f1)*1000:.2f} ms; rlock's 5 members +{(q5-one)*1000:.2f} ms")
s1, s5 = (statistics.median(times[n]) for n in ("scripts floor, one server", "scripts floor, 5 members"))
print(f"scripts floor (the same client sending rlock's own requests): one server {s1*1000:.2f} ms, "
      f"5 members {s5*1000:.2f} ms: +{(s5-s1)*1000:.2f} ms")
PY

# What the members' servers spend for one process: their CPU time (utime + stime from
# /proc, in clock ticks of 10 ms, over RUNS processes each) for `rlock lock` of a fresh name
# on one server and on the 5 members, and for the floor client on the 5 members. On the 2
# cores the client shares with them, this is what the 5-member row pays for.
server_cpu() {  # the summed CPU ticks of the servers whose indexes are given
    local sum=0 i f
    for i in "$@"; do
        read -ra f <"/proc/${pids[i]}/stat"
        sum=$((sum + f[13] + f[14]))
    done
    echo "$sum"
}
us_per_run() {  # servers... -- command...: the servers' CPU per run of the command, in us
    local servers=() before after k
    while [ "$1" != -- ]; do servers+=("$1"); shift; done
    shift
    before=$(server_cpu "${servers[@]}")
    for ((k = 0; k < RUNS; k++)); do "$@" "cpu-$k" >/dev/null; done
    after=$(server_cpu "${servers[@]}")
    echo $(((after - before) * 1000000 / $(getconf CLK_TCK) / RUNS))
}
fresh_lock() { "$RLOCK_BIN" --url "$1" lock "$2-$3" --owner o --lease 60s; }
one_cpu=$(us_per_run 5 -- fresh_lock "$single" one)
q5_cpu=$(us_per_run 0 1 2 3 4 -- fresh_lock "$q5" five)
floor_at() { "$floor_bin" 3 "${ports[@]:0:5}"; }
floor_cpu=$(us_per_run 0 1 2 3 4 -- floor_at)
echo "servers' CPU per process ($RUNS processes each): lock, one server ${one_cpu} us; lock, quorum" \
    "of 5 ${q5_cpu} us ($((q5_cpu / 5)) us a member); floor, 5 members ${floor_cpu} us"

# Hand-off: the holder's `unlock` starts the clock, the queued waiter's exit (it holds the
# lock) stops it; medians over ROUNDS rounds, one server and a quorum of 3 taking turns.
python3 - "$RLOCK_BIN" "$single" "$q3" "$ROUNDS" "${ports[5]}" "${ports[0]}" <<'PY'
import statistics, subprocess, sys, time
rlock, single, q3, rounds, single_port, q3_port = sys.argv[1:7]
def handoff(url, port, name):
    run = lambda *a: subprocess.run([rlock, "--url", url, *a], capture_output=True, check=True)
    run("lock", name, "--owner", "h", "--lease", "30s")
    waiter = subprocess.Popen([rlock, "--url", url, "lock", name, "--owner", "w", "--wait", "10s"],
                              stdout=subprocess.DEVNULL)
    key = "rlock:lock:{%s}:waiters" % name
    while subprocess.run(["redis-cli", "-p", port, "ZCARD", key], capture_output=True,
                         text=True).stdout.strip() != "1":
        time.sleep(0.002)
    start = time.monotonic()
    run("unlock", name, "--owner", "h")
    if waiter.wait(timeout=10) != 0: raise SystemExit("waiter failed")
    took = (time.monotonic() - start) * 1000
    run("unlock", name, "--owner", "w")
    return took
one, three = [], []
for _ in range(int(rounds)):
    one.append(handoff(single, single_port, "bench-handoff"))
    three.append(handoff(q3, q3_port, "bench-handoff"))
a, b = statistics.median(one), statistics.median(three)
print(f"hand-off (unlock -> waiter holds and exits), {rounds} rounds: one server median {a:.2f} ms, "
      f"quorum of 3 median {b:.2f} ms = {b/a:.2f}x")
PY

for members in "${ports[0]},${ports[1]},${ports[2]}" "${ports[0]},${ports[1]},${ports[2]},${ports[3]},${ports[4]}"; do
    n=$(tr ',' '\n' <<<"$members" | wc -l)
    read -r median p90 < <(node "$ROOT/bench/redlock/acquire.js" "$RUNS" "$members")
    echo "node-redlock 4.2.0 acquisition on the same $n members, in-process: median $median ms, p90 $p90 ms"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
