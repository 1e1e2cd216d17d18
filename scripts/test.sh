#!/usr/bin/env bash
# Installs what is missing, checks the formatting, builds with warnings as errors, and runs
# every test: unit tests,
# integration tests against real redis-servers the harness starts on free ports, every
# primitive's integration tests again with those servers as one-node clusters and behind
# sentinels (ctest's integration_cluster and integration_sentinel, tests/CMakeLists.txt),
# and the seeded fuzz pass. Then builds again with AddressSanitizer and UndefinedBehaviorSanitizer
# (build-asan/) and runs the unit tests and the fuzz pass there: any report fails them.
# Every stage runs even when an earlier one failed (a failing integration test must not
# hide a sanitizer report); the script fails at the end, naming the stages that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# faketime: limit_test runs callers with skewed clocks; time: GNU time measures inspect's
# peak RSS.
scripts/install-deps.sh clang-format faketime time

failed=()
# Runs one stage (a shell function) in a subshell that stops at its first failing command,
# and records its failure instead of stopping the script. (Not `if ! (...)`: bash ignores
# set -e inside a tested command, so a stage would go on past a failure.)
stage() {
  local name=$1 rc
  shift
  echo "== $name"
  set +e
  (set -euo pipefail; "$@")
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    echo "== $name: FAILED (exit $rc)" >&2
    failed+=("$name")
  fi
  return 0
}

format_check() {
  git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run --Werror
}

build() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_WERROR=ON >/dev/null
  cmake --build build -j"$(nproc)"
}

tests() {
  ctest --test-dir build --output-on-failure
}

# -O1 with line tables only: half the build time of -O2 -g (the whole run must stay under
# 30 minutes on 2 cores), and what sanitizers are usually run with.
sanitized() {
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DRLOCK_WERROR=ON -DRLOCK_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$(nproc)" --target rlock rlock_unit_tests rlock_fuzz_tests
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    RLOCK_FUZZ_RUNS=${RLOCK_FUZZ_RUNS:-2000} RLOCK_FUZZ_SEED=${RLOCK_FUZZ_SEED:-7} \
    ctest --test-dir build-asan --output-on-failure -R '^(unit|fuzz)$'
}

stage "clang-format (.clang-format): every C++ file as formatted" format_check
before=${#failed[@]}
stage "build (build/, warnings as errors)" build
if [ ${#failed[@]} -ne "$before" ]; then
  echo "== tests (build/): not run, the build failed" >&2
  failed+=("tests (build/)")
else
  stage "tests (build/): unit, integration (standalone, cluster, sentinel) and fuzz" tests
fi
# The recipes in examples/ (their files parsed and verified, the commands they run run).
stage "examples (examples/): recipes checked and run" scripts/examples-test.sh
# The Debian package built, installed, checked, exercised and removed. The suite's
# exec, lock and command-line cases run against the installed /usr/bin/rlock (the whole
# suite ran against build/ above; running it twice would not fit CI's time).
if [ -z "${RLOCK_TEST_BINARY:-}" ]; then
  stage "Debian package (build-pkg/): built, installed, exercised, removed" \
    scripts/package-test.sh -tc='exec:*,lock*,unlock*,hostile: the command line guides*,completions*'
fi
stage "ASan+UBSan build (build-asan/): unit tests and fuzz pass" sanitized

if [ ${#failed[@]} -gt 0 ]; then
  printf 'rlock: failed stage: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "== all stages passed"
