#!/usr/bin/env bash
# The study: Release build, then every available kernel timed over a matrix of sequence lengths
# and head dims (median of repeated calls), printed as a table and saved under reports/runs/.
#   scripts/study.sh [--n 256,1024,4096] [--d 64,128] [--threads 1] [--reps 5] [--kernel REGEX]
# (Arguments go to build/bin/attnbench_time; the Google Benchmark suite will replace this body.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --check >/dev/null || scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target attnbench_time

out="reports/runs/$(date +%Y-%m-%d)-$(hostname -s)"
mkdir -p "$out"
echo "study: $(nproc) cores; results in $out/time_kernels.txt"
build/bin/attnbench_time --n 256,1024,2048 --d 64,128 "$@" | tee "$out/time_kernels.txt"
