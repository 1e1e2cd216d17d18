#!/usr/bin/env bash
# Installs what is missing, checks the formatting, builds with warnings as errors, and runs
# every test: unit tests,
# integration tests against real redis-servers the harness starts on free ports, and the
# seeded fuzz pass. Then builds again with AddressSanitizer and UndefinedBehaviorSanitizer
# (build-asan/) and runs the unit tests and the fuzz pass there: any report fails them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh clang-format faketime  # faketime: limit_test runs callers with skewed clocks

echo "== clang-format (.clang-format): every C++ file as formatted"
git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run --Werror

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure

echo "== ASan+UBSan build (build-asan/): unit tests and fuzz pass"
# -O1 with line tables only: half the build time of -O2 -g (the whole run must stay under
# 20 minutes on 2 cores), and what sanitizers are usually run with.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DRLOCK_WERROR=ON -DRLOCK_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)" --target rlock rlock_unit_tests rlock_fuzz_tests
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  RLOCK_FUZZ_RUNS=${RLOCK_FUZZ_RUNS:-2000} RLOCK_FUZZ_SEED=${RLOCK_FUZZ_SEED:-7} \
  ctest --test-dir build-asan --output-on-failure -R '^(unit|fuzz)$'
