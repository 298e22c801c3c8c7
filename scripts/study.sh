#!/usr/bin/env bash
# The study: set-up if needed, Release build, the benchmark matrix, then the report.
#   scripts/study.sh [--preset quick|standard|full] [--out DIR] [--filter REGEX] [-- google-benchmark flags]
# quick: the CI preset (a few minutes on 2 cores); standard: the study, every window and every report
# section at the report's own targets (about 26 minutes on 2 cores); full: the long curves (hours).
# Results: Google Benchmark's JSON in DIR/results.json (default reports/runs/<date>-<host>/), so
# two runs compare with compare.py (see README), the contenders' windows in DIR/contenders.json and
# DIR/python_contenders.json, the decode window in DIR/decode.json, the long-context window in
# DIR/context.json, the scaling window in
# DIR/scaling.json, the phases window in DIR/phases.json, the ring window in DIR/ring_window.json
# (built with MPI), the machine constants measured again after them all in DIR/constants.json; the
# report is written next to them.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=quick
out=""
filter=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --preset) preset="${2:?--preset needs quick, standard or full}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --filter) filter="${2:?--filter needs a regex}"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "study.sh: unknown argument '$1' (--preset quick|standard|full, --out DIR, --filter REGEX)" >&2; exit 2 ;;
  esac
done
case "$preset" in quick|standard|full) ;; *) echo "study.sh: --preset $preset: expected quick, standard or full" >&2; exit 2 ;; esac
out="${out:-reports/runs/$(date +%Y-%m-%d)-$(hostname -s)-$preset}"

scripts/setup.sh --check >/dev/null || scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target attnbench_bench attnbench_cli attnbench_capi
# The project's Python (.venv/, scripts/setup.sh), the report package from the source tree.
python=.venv/bin/python
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1

mkdir -p "$out"
# The build's commit and version (every window's JSON context has them too: git_commit, git_dirty,
# attnbench_version), read by the build itself (cmake/git_commit.cmake), so never older than it.
echo "study: preset $preset, $(build/bin/attnbench --version), $(nproc) cores, results in $out/results.json"
study_start=$(date +%s)
summary=""
took() {  # "study: preset P: <step> took N s" since $start; the summary line at the end lists them
  local seconds=$(( $(date +%s) - start ))
  summary+="${summary:+, }$1 $seconds s"
  echo "study: preset $preset: $1 took $seconds s"
}
start=$(date +%s)
# The matrix, its repetitions interleaved at random so that a ratio between two points has both
# sides spread over the same minutes (each point's outputs and workspace kept warm in between).
build/bin/attnbench_bench --preset="$preset" \
  ${filter:+--benchmark_filter="$filter"} \
  --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/results.json" --benchmark_out_format=json \
  "${extra[@]}" | tee "$out/console.txt"
took matrix
# The contenders' windows: the C++ contenders (attnbench's kernels, oneDNN) with Google Benchmark's
# repetitions interleaved at random across all of them, then NumPy and PyTorch beside tiled/simd in
# alternating rounds in one Python process. Ratios are read within a window, never across.
start=$(date +%s)
build/bin/attnbench_bench --preset="$preset" --contenders \
  ${filter:+--benchmark_filter="$filter"} \
  --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/contenders.json" --benchmark_out_format=json \
  "${extra[@]}" | tee "$out/contenders_console.txt"
"$python" scripts/contenders.py --preset "$preset" --lib build/lib/libattnbench_capi.so \
  --out "$out/python_contenders.json" ${filter:+--filter "$filter"}
# The bf16 window: attnbench's bf16-products kernel beside PyTorch's bf16 SDPA on the same bfloat16
# values (its attnbench points fail as unsupported where the CPU lacks AVX512_BF16).
"$python" scripts/contenders.py --preset "$preset" --lib build/lib/libattnbench_capi.so --dtype bf16 \
  --out "$out/python_contenders_bf16.json" ${filter:+--filter "$filter"}
# The q8_0 window: one-row decode through a q8_0 K/V cache, attnbench's against ggml's (llama.cpp's
# --cache-type-k/v q8_0), on the same q8_0 values.
"$python" scripts/contenders.py --preset "$preset" --lib build/lib/libattnbench_capi.so --dtype q8_0 \
  --out "$out/python_contenders_q8_0.json" ${filter:+--filter "$filter"}
took contenders
# The decode window: decoding against a persistent KV cache in each storage type, the decode loop
# and prefill, its repetitions interleaved at random so the ratios between types are fair.
start=$(date +%s)
build/bin/attnbench_bench --preset="$preset" --decode \
  ${filter:+--benchmark_filter="$filter"} \
  --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/decode.json" --benchmark_out_format=json \
  "${extra[@]}" | tee "$out/decode_console.txt"
took decode
# The long-context window: a sliding window against the full causal mask over long heads, its
# repetitions interleaved at random so that the ratios between lengths and masks are fair.
start=$(date +%s)
build/bin/attnbench_bench --preset="$preset" --context \
  ${filter:+--benchmark_filter="$filter"} \
  --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/context.json" --benchmark_out_format=json \
  "${extra[@]}" | tee "$out/context_console.txt"
took context
# The scaling window: 1 thread against all in pairs of calls, the pairs' median ratio.
start=$(date +%s)
build/bin/attnbench_bench --preset="$preset" --scaling \
  ${filter:+--benchmark_filter="$filter"} \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/scaling.json" --benchmark_out_format=json \
  "${extra[@]}" | tee "$out/scaling_console.txt"
took scaling
# The phases window: the tiled SIMD kernels' phases timed alone, in rotating rounds (the cost
# model's measured breakdown).
start=$(date +%s)
build/bin/attnbench_bench --preset="$preset" --phases \
  ${filter:+--benchmark_filter="$filter"} \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/phases.json" --benchmark_out_format=json \
  "${extra[@]}" | tee "$out/phases_console.txt"
took phases
# The ring window (bench/ring_window.py): ring attention over MPI, one rank against two ranks of one
# thread and one rank of two oneTBB threads, by turns; left out, saying so, when the build has no MPI.
start=$(date +%s)
if build/bin/attnbench ring --help >/dev/null 2>&1 && command -v mpirun >/dev/null; then
  "$python" bench/ring_window.py --cli build/bin/attnbench --preset "$preset" --out "$out" > "$out/ring_console.txt"
else
  echo "study: no ring window: this build has no MPI (ring/ is built when CMake finds Open MPI)"
fi
took ring
# The cost model's machine constants once more, after every window (the matrix's context has the
# first reading): a shared host may have been slow in that minute, and the model takes the faster
# reading of each constant (python/attnbench_report/load/machine_constants.py).
start=$(date +%s)
build/bin/attnbench_bench --preset="$preset" --constants \
  --benchmark_out="$out/constants.json" --benchmark_out_format=json > "$out/constants_console.txt"
build/bin/attnbench demo all --json "$out/demos.json"
took "constants and demos"

start=$(date +%s)
"$python" -m attnbench_report "$out"
took report
echo "study: preset $preset took $(( $(date +%s) - study_start )) s after the build ($summary)"
