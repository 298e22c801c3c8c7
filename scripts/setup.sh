#!/usr/bin/env bash
# Installs every system package attnbench needs, from Debian 12's apt. Idempotent: does nothing
# when all are present. Run as root (or with sudo available).
#   scripts/setup.sh           install what is missing
#   scripts/setup.sh --check   exit 1 if anything is missing, install nothing
set -euo pipefail

packages=(
  g++ cmake ninja-build              # toolchain
  clang-format                       # the code's format (scripts/format.sh, format_test)
  libxsimd-dev xtl-dev               # SIMD kernels (xsimd 8.1)
  libtbb-dev                         # threads (oneTBB 2021.8)
  libgtest-dev                       # tests (GoogleTest 1.12)
  libbenchmark-dev libbenchmark-tools  # benchmarks (Google Benchmark 1.7.1, compare.py)
  libopenblas-dev                    # the OpenBLAS baseline
  libdnnl-dev                        # contender: oneDNN 2.6 (bench/contender_onednn.cpp)
  python3-torch                      # contender: PyTorch 1.13 (scripts/contenders.py)
  libcli11-dev nlohmann-json3-dev    # command line, JSON
  pybind11-dev python3-dev           # the Python module (python/)
  python3-numpy python3-matplotlib python3-jinja2  # tests' .npy files, reports
  chromium                           # the report test opens report.html headless
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [[ ${1:-} == --check ]]; then
  [[ ${#missing[@]} -eq 0 ]] || { echo "missing packages: ${missing[*]}"; exit 1; }
  exit 0
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
