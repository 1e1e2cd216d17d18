#!/usr/bin/env bash
# The primitives' integration runs of tests/CMakeLists.txt (ctest's integration_primitives,
# integration_cluster and integration_sentinel) against Valkey 8 and against Redis 8 from
# Debian trixie, where the host's own redis-server may be older (bookworm's is 7.0).
# Usage: scripts/trixie-test.sh [build dir, default build] [extra ctest arguments...]
#
# The servers come from a root of trixie's packages that mmdebstrap extracts (no maintainer
# scripts run: no daemon starts, no chroot or mount is needed) and that is kept between runs
# in RLOCK_TRIXIE_ROOT (default /var/cache/rlock/trixie-root, or ~/.cache/rlock/trixie-root
# when /var/cache is not writable); it is made again when it is missing, broken (a library
# missing from it, a server that does not start) or holds another set of packages. The
# servers run from that root through its own dynamic loader and libraries, the tests
# outside it: `redis-server` and `redis-sentinel` first on PATH are wrappers that start
# trixie's binaries, so the harness's configuration files and directories under /tmp serve
# unchanged. The client tools (redis-cli) stay the host's.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build}
shift || true
mirror=${RLOCK_TRIXIE_MIRROR:-http://deb.debian.org/debian}
packages=redis-server,redis-sentinel,valkey-server,valkey-sentinel
if [ -z "${RLOCK_TRIXIE_ROOT:-}" ]; then
  if mkdir -p /var/cache/rlock 2>/dev/null && [ -w /var/cache/rlock ]; then
    RLOCK_TRIXIE_ROOT=/var/cache/rlock/trixie-root
  else
    RLOCK_TRIXIE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/rlock/trixie-root
  fi
fi
root=$RLOCK_TRIXIE_ROOT
stamp=$root/.rlock-stamp

# The root's dynamic loader, and the command line that starts a binary of the root with it
# and the root's libraries only. (The host's ld.so.cache is not read; a library missing
# from the root would still be looked for in the host's /lib and /usr/lib, which root_ok
# rules out.)
root_loader() {
  local loaders=("$1"/usr/lib/*/ld-linux*.so.[0-9])
  [ -x "${loaders[0]}" ] && echo "${loaders[0]}"
}
root_exec() {
  local r=$1 loader
  loader=$(root_loader "$r") || return 1
  echo "\"$loader\" --inhibit-cache --library-path \"$(dirname "$loader")\" \"$r/usr/bin/$2\""
}

# Writes to `dir`/redis-server and `dir`/redis-sentinel wrappers that start the root's
# `server` and `sentinel` binaries. (Started through the loader, a binary's argv[0] stays
# its path in the root: the sentinel's name still selects sentinel mode.)
write_wrappers() {
  local r=$1 dir=$2 server sentinel
  server=$(root_exec "$r" "$3") && sentinel=$(root_exec "$r" "$4") || return 1
  mkdir -p "$dir"
  printf '#!/bin/sh\nexec %s "$@"\n' "$server" >"$dir/redis-server"
  printf '#!/bin/sh\nexec %s "$@"\n' "$sentinel" >"$dir/redis-sentinel"
  chmod 755 "$dir/redis-server" "$dir/redis-sentinel"
}

# The root serves when it holds the wanted packages, every library both servers need is in
# it, and both start and name themselves (a half-made or damaged root fails here).
root_ok() {
  local r=$1 loader server libs check rc=1
  grep -qx "packages: $packages" "$r/.rlock-stamp" 2>/dev/null || return 1
  loader=$(root_loader "$r") || return 1
  for server in valkey-server redis-server; do
    libs=$("$loader" --inhibit-cache --library-path "$(dirname "$loader")" \
      --list "$r/usr/bin/$server" 2>&1 || true)
    if grep "=>" <<<"$libs" | grep -v "=> $r/" >/dev/null; then return 1; fi
  done
  check=$(mktemp -d)
  if write_wrappers "$r" "$check/valkey" valkey-server valkey-sentinel &&
    write_wrappers "$r" "$check/redis" redis-server redis-sentinel &&
    "$check/valkey/redis-server" --version | grep -q '^Valkey server v=8\.' &&
    "$check/redis/redis-server" --version | grep -q '^Redis server v=8\.'; then
    rc=0
  fi
  rm -rf "$check"
  return $rc
}

# Made beside the cached root and renamed into place, under a lock: a run that stops half
# way leaves no half-made root, and two runs at once make it once.
make_root() {
  mkdir -p "$(dirname "$root")"
  exec 9>"$root.lock"
  flock 9
  if root_ok "$root"; then return 0; fi
  local new=$root.new.$$ started=$SECONDS
  rm -rf "$new"
  echo "rlock: making a root of Debian trixie's $packages in $root" >&2
  # shellcheck disable=SC2016 # $1 is the hook's argument, the new root
  mmdebstrap --quiet --variant=extract --mode=auto \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg --include="$packages" \
    --extract-hook='ls "$1"/var/cache/apt/archives/ | sed -n "s/\.deb$//p" > "$1"/.rlock-debs' \
    trixie "$new" "$mirror" >&2
  {
    echo "packages: $packages"
    echo "made: $(date -u +%FT%TZ) from $mirror trixie"
    sed 's/%3a/:/g; s/^\([^_]*\)_\([^_]*\)_.*/deb: \1 \2/' "$new/.rlock-debs"
  } >"$new/.rlock-stamp"
  rm -f "$new/.rlock-debs"
  root_ok "$new" || { echo "rlock: the new trixie root's servers do not start" >&2; return 1; }
  rm -rf "$root"
  mv "$new" "$root"
  echo "rlock: trixie root made in $((SECONDS - started)) s" >&2
  exec 9>&-
}

if ! root_ok "$root"; then make_root; fi
grep '^deb: \(redis\|valkey\)-\(server\|sentinel\) ' "$stamp" >&2

# One run per server, both at once, each in a process group of its own (set -m) so that a
# run stopped half way stops its ctest and tests too.
work=$(mktemp -d)
pids=()
stop_runs() {
  local pid
  for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop_runs EXIT
build_tests=$(cd "$build_dir/tests" && pwd)
ctest_args=("$@")

# Runs the named ctest tests one after the other with `bin` first on PATH, in a test
# directory of its own that takes the build's test definitions (the two runs at once do not
# share ctest's logs and timing data in build/); fails naming the tests that failed.
run_tests() {
  local dir=$1 bin=$2 test failed=()
  shift 2
  mkdir -p "$dir"
  echo "include(\"$build_tests/CTestTestfile.cmake\")" >"$dir/CTestTestfile.cmake"
  for test in "$@"; do
    PATH=$bin:$PATH ctest --test-dir "$dir" --output-on-failure -R "^$test\$" "${ctest_args[@]}" ||
      failed+=("$test")
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}"
    return 1
  fi
}

# The same three runs on each side, so both end together, in opposite orders: the
# standalone run's load tests (16 processes x 50 runs...) on one side meet the cluster and
# Sentinel runs, which leave them out, on the other, not the same load tests at once.
names=()
set -m
for server in valkey redis; do
  bin=$work/$server/bin
  write_wrappers "$root" "$bin" "$server-server" "$server-sentinel"
  version=$("$bin/redis-server" --version | sed -n 's/^\([A-Za-z]*\) server v=\([^ ]*\).*/\1 \2/p')
  if [ "$server" = valkey ]; then
    order=(integration_primitives integration_cluster integration_sentinel)
  else
    order=(integration_cluster integration_sentinel integration_primitives)
  fi
  (run_tests "$work/$server/ctest" "$bin" "${order[@]}" 2>&1 | sed -u "s/^/[$version] /") &
  pids+=($!)
  names+=("$version")
done
set +m
failed=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done
pids=()
if [ ${#failed[@]} -gt 0 ]; then
  echo "rlock: the primitives' runs failed against: ${failed[*]}" >&2
  exit 1
fi
