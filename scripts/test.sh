#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test: unit tests
# and integration tests against real redis-servers the harness starts on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure
