#!/usr/bin/env bash
# The fuzzers: builds the libFuzzer targets (clang++, ASan + UBSan, the `fuzz` preset, build-fuzz/)
# and runs each for a bounded time, starting from its seed corpus and saved crash inputs.
#   scripts/fuzz.sh [--seconds 60] [--target attention|npy|all] [--seed N]
# A target that fails leaves its input in build-fuzz/artifacts/<target>/ and this script exits 1.
# New inputs that reached new code stay in build-fuzz/corpus/<target>/ (not in the repo).
# ATTNBENCH_FUZZ_SKIP=name,name leaves kernels out of fuzz_attention (see fuzz/fuzz_attention.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
targets=(attention npy)
seed=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --target) [[ $2 == all ]] || targets=("$2"); shift 2 ;;
    --seed) seed=(-seed="$2"); shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--seconds N] [--target attention|npy|all] [--seed N]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh --check >/dev/null || scripts/setup.sh
# clang++ and its libFuzzer and sanitizer runtimes, from Debian, beside the g++ toolchain.
fuzz_packages=(clang libclang-rt-14-dev)
missing=()
for p in "${fuzz_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "fuzz: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

# Per target: its options. fuzz_npy's inputs stay small (16 KiB), so no allocation inside the
# reader may come near 16 MiB (-malloc_limit_mb); the target itself also checks that no single
# allocation exceeds the input's size.
declare -A options=(
  [attention]="-max_len=2048 -timeout=60 -rss_limit_mb=2048"
  [npy]="-max_len=16384 -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=16"
)

status=0
for target in "${targets[@]}"; do
  [[ -n ${options[$target]:-} ]] || { echo "fuzz: unknown target $target" >&2; exit 2; }
  work=build-fuzz/corpus/$target
  artifacts=build-fuzz/artifacts/$target
  log=build-fuzz/logs/$target.log
  mkdir -p "$work" "$artifacts" "$(dirname "$log")" "fuzz/regressions/$target"
  echo "fuzz: $target for ${seconds}s (log $log)"
  start=$SECONDS
  # shellcheck disable=SC2086  # options are words
  if build-fuzz/bin/fuzz_"$target" ${options[$target]} "${seed[@]}" -max_total_time="$seconds" \
      -print_final_stats=1 -artifact_prefix="$artifacts/" \
      "$work" "fuzz/corpus/$target" "fuzz/regressions/$target" >"$log" 2>&1; then
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
    echo "fuzz: $target passed: ${runs:-?} runs in $((SECONDS - start))s," \
      "$(sed -nE 's/^INFO: Seed: ([0-9]+).*/seed \1/p' "$log" | head -1)," \
      "$(find "$work" -type f | wc -l) inputs in its working corpus"
  else
    status=1
    echo "fuzz: $target FAILED after $((SECONDS - start))s; the end of its log:"
    grep -E "^(fuzz_$target:|  case:|==[0-9]+==ERROR|SUMMARY|INFO: Seed)" "$log" | head -20 || true
    tail -5 "$log"
    echo "fuzz: the input is in $artifacts/. Reproduce: build-fuzz/bin/fuzz_$target <input>."
    echo "fuzz: a new finding, once understood, goes to fuzz/regressions/$target/<what-it-is>, so"
    echo "fuzz: that tests/fuzz_replay_test.cpp replays it from then on; one already there that"
    echo "fuzz: fails again is a known finding not yet fixed."
  fi
done
exit $status
