#!/usr/bin/env bash
# The test command: installs what is missing, configures and builds (Release, assertions on) in
# build/, and runs every test under ctest.
#   scripts/test.sh [extra ctest arguments, e.g. -R cli]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --check >/dev/null || scripts/setup.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNBENCH_ASSERTIONS=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
