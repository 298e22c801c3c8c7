#!/usr/bin/env bash
# The test command: installs what is missing, configures and builds the `release` preset
# (CMakePresets.json: Release, assertions on, in build/), and runs every test under ctest.
#   scripts/test.sh [extra ctest arguments, e.g. -R cli]
#   scripts/test.sh --sanitize   the sanitizer builds instead (CMakePresets.json): ASan + UBSan
#                                over every test (build-asan/), TSan over the threaded ones
#                                (build-tsan/, against a TSan-built oneTBB: scripts/tsan_tbb.sh;
#                                kernels_test and backward_test, the tests named *Thread*)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --check >/dev/null || scripts/setup.sh
jobs=$(nproc)

# One gtest binary run whole, its output kept in build-asan/logs/; its summary line on success,
# the end of its log on failure.
run_gtest_binary() {
  local log
  log=build-asan/logs/$(basename "$1").log
  if "$1" >"$log" 2>&1; then
    echo "asan: $(basename "$1"): $(grep -E '^\[  PASSED  \]' "$log" | tail -1)"
  else
    echo "asan: $(basename "$1") FAILED; the end of $log:"
    tail -40 "$log"
    return 1
  fi
}

sanitize() {
  local start=$SECONDS
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs"
  # The whole suite under ASan + UBSan. ctest runs each gtest case in a process of its own, and
  # under ASan starting ~3000 processes costs more than the tests; so each gtest binary runs
  # whole, once, and ctest runs the other tests that execute this build's programs (the CLI's).
  # Tests that run none (the report generator's, pure Python) are not the sanitizers' business.
  local listing
  listing=$(ctest --preset asan --show-only=json-v1 | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1]) + os.sep
binaries, others = [], []
for test in json.load(sys.stdin)["tests"]:
    command = test.get("command") or []
    if any(arg.startswith("--gtest_filter=") for arg in command):
        if command[0] not in binaries:
            binaries.append(command[0])
    elif any(os.path.realpath(arg).startswith(build) for arg in command[1:]):
        others.append(test["name"])
for b in binaries:
    print("binary", b)
for name in others:
    print("test", name)
' build-asan)
  local binaries others
  binaries=$(sed -n 's/^binary //p' <<<"$listing")
  others=$(sed -n 's/^test //p' <<<"$listing" | paste -sd'|')
  mkdir -p build-asan/logs
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export -f run_gtest_binary
  local status=0
  xargs -P "$jobs" -I{} bash -c 'run_gtest_binary "$1"' _ {} <<<"$binaries" || status=1
  if [[ -n $others ]]; then
    ctest --preset asan -j "$jobs" -R "^($others)\$" || status=1
  fi
  echo "asan: build and tests took $((SECONDS - start))s"

  # The threaded tests under TSan (the test preset's filter: names containing "Thread"/"thread").
  start=$SECONDS
  scripts/tsan_tbb.sh
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$jobs"
  ctest --preset tsan -j "$jobs" || status=1
  echo "tsan: build and tests took $((SECONDS - start))s"
  return $status
}

if [[ ${1:-} == --sanitize ]]; then
  shift
  sanitize
  exit
fi

cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs" "$@"
