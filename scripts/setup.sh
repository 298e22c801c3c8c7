#!/usr/bin/env bash
# Installs what attnbench needs: the C++ libraries and tools from Debian 12's apt, and the Python
# packages of requirements.txt (pinned, from PyPI) into the project's virtual environment .venv/.
# Idempotent: does nothing when all are present. Run as root (or with sudo available) for apt.
#   scripts/setup.sh           install what is missing
#   scripts/setup.sh --check   exit 1 if anything is missing, install nothing
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake ninja-build              # toolchain
  clang-format                       # the code's format (scripts/format.sh, format_test)
  libxsimd-dev xtl-dev               # SIMD kernels (xsimd 8.1)
  libtbb-dev                         # threads (oneTBB 2021.8)
  libgtest-dev                       # tests (GoogleTest 1.12)
  libbenchmark-dev libbenchmark-tools  # benchmarks (Google Benchmark 1.7.1, compare.py)
  python3-scipy                      # compare.py's statistics (Debian's /usr/bin/python3 runs it)
  libopenblas-dev                    # the OpenBLAS baseline
  libdnnl-dev                        # contender: oneDNN 2.6 (bench/contender_onednn.cpp)
  libcli11-dev nlohmann-json3-dev    # command line, JSON
  libopenmpi-dev openmpi-bin         # ring attention over MPI (ring/, Open MPI 4.1)
  python3-venv                       # the project's Python environment (.venv/, below)
  chromium                           # the report test opens report.html headless
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The virtual environment is current when it holds the requirements it was made from.
venv=.venv
venv_current() { cmp -s requirements.txt "$venv/requirements.installed"; }

if [[ ${1:-} == --check ]]; then
  status=0
  [[ ${#missing[@]} -eq 0 ]] || { echo "missing packages: ${missing[*]}"; status=1; }
  venv_current || { echo "$venv/ is missing or older than requirements.txt"; status=1; }
  exit $status
fi

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if venv_current; then
  echo "setup: $venv/ current with requirements.txt"
else
  echo "setup: installing requirements.txt into $venv/"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.txt
  cp requirements.txt "$venv/requirements.installed"
fi
