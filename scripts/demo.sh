#!/usr/bin/env bash
# Installs what is missing, builds rlock, and shows its main job: two `rlock exec` racing
# for one lock, and `rlock inspect` while one holds it; then, in a few lines each, what it
# is for beyond locks (a semaphore, a rate limit, a delayed item), and where the binary is
# and how to install it. Uses RLOCK_URL/REDIS_URL when set, otherwise a throwaway
# redis-server on a private unix socket, stopped at the end. Under a minute after the build.
# Single-quoted $VARS below are for the job's own shell.
# shellcheck disable=SC2016
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

step "rlock sem exec --permits 2 demo-encoders -- ...   # three jobs, at most two at once"
encoders=()
for i in 1 2 3; do
  rlock sem exec --permits 2 --wait 10s demo-encoders -- \
    sh -c "echo \"[encoder $i] has a permit (\$RLOCK_PERMITS) at \$(date +%T)\"; sleep 1" &
  encoders+=($!)
done
wait "${encoders[@]}"

step "rlock limit demo-api --rate 2 --per 1s --burst 2   # three calls at once: the third is limited"
for i in 1 2 3; do
  rlock -q limit demo-api --rate 2 --per 1s --burst 2 && echo "[call $i] allowed" ||
    echo "[call $i] limited (exit $?)"
done

step "rlock delay-push demo-mail 'welcome, ada' --delay 1s; rlock delay-pop demo-mail --wait 5s"
rlock -q delay-push demo-mail 'welcome, ada' --delay 1s
rlock delay-pop demo-mail --wait 5s

bin=$(cd build && pwd)/rlock
printf '\n== the binary is %s\n' "$bin"
printf '== install it (binary, rlock(1), completions) with: cmake --install build   (prefix /usr/local)\n'
printf '== or as a Debian package: see "Install" in README.md; then try: rlock help\n'
