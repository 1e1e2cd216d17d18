#!/usr/bin/env bash
# Installs what is missing, builds rlock, and shows its main job: two `rlock exec` racing
# for one lock, and `rlock inspect` while one holds it. Uses RLOCK_URL/REDIS_URL when set,
# otherwise a throwaway redis-server on a private unix socket, stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
echo "== building rlock in build/ (about a minute the first time; progress below)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target rlock
rlock() { build/rlock "$@"; }

tmp=$(mktemp -d)
redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -z "${RLOCK_URL:-}${REDIS_URL:-}" ]; then
  redis-server --port 0 --unixsocket "$tmp/redis.sock" --unixsocketperm 700 --save '' \
    --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
  redis_pid=$!
  export RLOCK_URL="unix://$tmp/redis.sock"
  for _ in $(seq 100); do [ -S "$tmp/redis.sock" ] && break; sleep 0.05; done
  echo "== throwaway redis-server (pid $redis_pid) at $RLOCK_URL"
fi

step() { printf '\n$ %s\n' "$*"; }

step "rlock exec demo-report -- sh -c '...; sleep 2'   # job A, in the background"
mkfifo "$tmp/started"
rlock exec demo-report -- sh -c \
  'echo "[A] running with the lock, fence $RLOCK_FENCE"; echo >'"$tmp/started"'; sleep 2; echo "[A] done"' &
job_a=$!
read -r _ <"$tmp/started"

step "rlock exec demo-report -- echo never   # job B: busy, so it does not run"
rlock exec demo-report -- echo never || echo "(exit $? = busy)"

step "rlock inspect --format table"
rlock inspect --format table

step "rlock exec --wait 10s demo-report -- sh -c '...'   # job C queues behind A"
rlock -v exec --wait 10s demo-report -- sh -c 'echo "[C] running after A, fence $RLOCK_FENCE"'
wait "$job_a"

step "rlock inspect   # nothing held any more"
rlock inspect
