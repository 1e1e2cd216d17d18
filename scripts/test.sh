#!/usr/bin/env bash
# Installs what is missing, checks the formatting, builds with warnings as errors, and runs
# every test: unit tests,
# integration tests against real redis-servers the harness starts on free ports, every
# primitive's integration tests again with those servers as one-node clusters and behind
# sentinels (ctest's integration_cluster and integration_sentinel, tests/CMakeLists.txt).
# Those primitives' runs again against Valkey 8 and Redis 8 from Debian trixie
# (scripts/trixie-test.sh: the servers from a root of trixie's packages, cached between runs).
# Then the recipes, the Debian package, and a build with AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan/, compiled while the tests run) where the unit tests
# and the seeded fuzz pass run: any report fails them.
# Every stage runs even when an earlier one failed (a failing integration test must not
# hide a sanitizer report); the script fails at the end, naming the stages that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# faketime: limit_test runs callers with skewed clocks; time: GNU time measures inspect's
# peak RSS; zsh, fish, bash-completion: completions_test drives each shell on a terminal;
# mmdebstrap: the root of trixie's servers.
scripts/install-deps.sh clang-format faketime time zsh fish bash-completion mmdebstrap

failed=()
# Runs one stage (a shell function) in a subshell that stops at its first failing command,
# and records its failure instead of stopping the script. (Not `if ! (...)`: bash ignores
# set -e inside a tested command, so a stage would go on past a failure.)
stage() {
  local name=$1 rc started=$SECONDS
  shift
  echo "== $name"
  set +e
  (set -euo pipefail; "$@")
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    echo "== $name: FAILED (exit $rc) after $((SECONDS - started)) s" >&2
    failed+=("$name")
  else
    echo "== $name: passed in $((SECONDS - started)) s"
  fi
  return 0
}

format_check() {
  scripts/format-check.sh
}

build() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_WERROR=ON >/dev/null
  cmake --build build -j"$(nproc)"
}

# The seeded fuzz pass runs once, in the sanitized build below, where it also finds what
# it alone would not (a leak, undefined behaviour). Two at a time: the standalone run's two
# halves beside the cluster and the Sentinel runs, longest first (tests/CMakeLists.txt; their
# servers and processes mostly wait; the suite passes on a busy machine), so that with the
# trixie stage the whole run fits CI's 45 minutes on 2 cores.
tests() {
  ctest --test-dir build --output-on-failure -E '^fuzz$' -j2
}

# -O1 with line tables only: half the build time of -O2 -g, and what sanitizers are usually
# run with.
sanitized_configure() {
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DRLOCK_WERROR=ON -DRLOCK_SANITIZE=ON >/dev/null
}
asan_targets=(--target rlock rlock_unit_tests rlock_fuzz_tests)
sanitized_tests() {
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    RLOCK_FUZZ_RUNS=${RLOCK_FUZZ_RUNS:-1200} RLOCK_FUZZ_SEED=${RLOCK_FUZZ_SEED:-7} \
    ctest --test-dir build-asan --output-on-failure -R '^(unit|fuzz)$'
}

# The sanitized build compiles while the integration tests run, on one core at the lowest
# priority: the tests mostly wait (leases, servers, pub/sub), and the whole run must stay
# under 45 minutes on 2 cores. The suite passes on a busy machine (its timed checks have
# generous bounds); a test run with the machine to itself is `ctest --test-dir build`.
asan_pid=
start_sanitized_build() {
  set -m
  (set -euo pipefail; sanitized_configure; nice -n 19 cmake --build build-asan -j1 "${asan_targets[@]}") \
    >/dev/null 2>&1 &
  asan_pid=$!
  set +m
}
# After the tests, what is left of that build goes on at full speed in the sanitized stage
# (make keeps what it compiled; the one compile stopped here starts again), which also
# reports any error the background build met. In the script itself, not in a stage's
# subshell: only the shell that started the build can wait for it.
stop_background_build() {
  if [ -n "$asan_pid" ]; then
    kill -- "-$asan_pid" 2>/dev/null || true
    wait "$asan_pid" 2>/dev/null || true
    asan_pid=
  fi
}
sanitized() {
  sanitized_configure
  cmake --build build-asan -j"$(nproc)" "${asan_targets[@]}"
  sanitized_tests
}
# The build runs in a process group of its own (set -m), so that an interrupted run stops
# the compilers too.
trap 'if [ -n "$asan_pid" ]; then kill -- "-$asan_pid" 2>/dev/null || true; fi' EXIT

stage "clang-format (.clang-format): every C++ file as formatted" format_check
# The same check in HEAD's tree exported without .git and git (a release tarball's).
if git rev-parse --git-dir >/dev/null 2>&1; then
  stage "clang-format in a tree without git (a release tarball)" scripts/format-check.sh --without-git
fi
before=${#failed[@]}
stage "build (build/, warnings as errors)" build
if [ ${#failed[@]} -ne "$before" ]; then
  echo "== tests (build/) and trixie servers (build/): not run, the build failed" >&2
  failed+=("tests (build/)" "trixie servers (build/)")
else
  start_sanitized_build
  stage "tests (build/): unit, integration (standalone, cluster, sentinel, quorum)" tests
  # While the sanitized build still compiles beside it. 760 s on 2 cores (CI68: each
  # server's primitives, cluster and Sentinel runs 336 s, 206-217 s and 206-218 s); making
  # the root of trixie's servers the first time, 9-20 s more.
  stage "trixie servers (build/): the primitives' runs against Valkey 8 and Redis 8" \
    scripts/trixie-test.sh build
fi
# The recipes in examples/ (their files parsed and verified, the commands they run run).
stage "examples (examples/): recipes checked and run" scripts/examples-test.sh
# The Debian package built, installed, checked, exercised and removed. The suite's
# exec, lock and command-line cases run against the installed /usr/bin/rlock (the whole
# suite ran against build/ above; running it twice would not fit CI's time).
if [ -z "${RLOCK_TEST_BINARY:-}" ]; then
  stage "Debian package (from build/): built, installed, exercised, removed" \
    env RLOCK_PACKAGE_BUILD_DIR=build scripts/package-test.sh -tc='exec:*,lock*,unlock*,hostile: the command line guides*,completions*' \
    -tce='exec: 16 processes*'
fi
stop_background_build
stage "ASan+UBSan build (build-asan/): unit tests and fuzz pass" sanitized

if [ ${#failed[@]} -gt 0 ]; then
  printf 'rlock: failed stage: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "== all stages passed in $SECONDS s"
