#!/usr/bin/env bash
# What TLS costs a short-lived rlock: `rlock exec NAME -- true` over rediss:// against
# `redis-cli --tls PING` (one TLS connection, one command, per process) and against the same
# exec over plain redis://, all in one hyperfine run against one throwaway redis-server that
# listens on both ports. Certificates (a CA and a P-256 server certificate for 127.0.0.1) are
# made with openssl in a temporary directory, removed on exit with the server.
# Usage: RLOCK_BIN=build/rlock bench/tls.sh   (BENCH_RUNS, default 100; BENCH_WARMUP, 10)
set -euo pipefail
RLOCK_BIN=${RLOCK_BIN:-build/rlock}
RUNS=${BENCH_RUNS:-100}
WARMUP=${BENCH_WARMUP:-10}
for tool in redis-server redis-cli openssl hyperfine; do
    command -v "$tool" >/dev/null || { echo "bench/tls.sh: $tool is missing" >&2; exit 69; }
done

dir=$(mktemp -d)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key "$dir/ca.key"
openssl req -x509 -new -key "$dir/ca.key" -subj "/CN=bench CA" -days 2 -out "$dir/ca.crt"
key "$dir/server.key"
openssl req -new -key "$dir/server.key" -subj "/CN=127.0.0.1" -out "$dir/server.csr"
printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 2 -extfile "$dir/ext" -out "$dir/server.crt" 2>/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
tls_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$port" --tls-port "$tls_port" --save '' --appendonly no \
    --tls-cert-file "$dir/server.crt" --tls-key-file "$dir/server.key" \
    --tls-ca-cert-file "$dir/ca.crt" --tls-auth-clients no --logfile "$dir/redis.log" &
server_pid=$!
for _ in $(seq 100); do
    redis-cli -p "$port" PING >/dev/null 2>&1 && break
    sleep 0.05
done

tls=(--url "rediss://127.0.0.1:$tls_port" --tls-ca-cert "$dir/ca.crt")
"$RLOCK_BIN" "${tls[@]}" exec bench-tls -- true  # fails loudly before hyperfine if broken
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
hyperfine -N --warmup "$WARMUP" --runs "$RUNS" \
    -n "rlock exec over TLS" "$RLOCK_BIN ${tls[*]} exec bench-tls -- true" \
    -n "redis-cli --tls PING" "redis-cli --tls --cacert $dir/ca.crt -p $tls_port PING" \
    -n "rlock exec plain" "$RLOCK_BIN --url redis://127.0.0.1:$port exec bench-plain -- true" \
    -n "redis-cli PING plain" "redis-cli -p $port PING"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
