#!/usr/bin/env bash
# Installs what attnbench needs: the C++ libraries and tools from Debian 12's apt, the Python
# packages of requirements.txt (pinned, from PyPI) into the project's virtual environment .venv/, and
# ggml (the contender llama.cpp runs on the CPU) built from the pinned llama-cpp-python source on PyPI
# into .venv/ggml/, and oneDNN 3.x (the Graph API contender) from its pinned PyPI wheel into
# .venv/onednn/.
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

# ggml: PyPI ships it only inside llama-cpp-python's source distribution (vendor/llama.cpp/ggml/).
# Only its CPU backend is built (under a minute on 2 cores), as llama.cpp builds it from source
# (GGML_NATIVE, OpenMP threads), into .venv/ggml/{lib,include}; docs/contenders.md says how it is called.
ggml_sdist=llama_cpp_python-0.3.36
ggml_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
ggml_dir=$venv/ggml
ggml_current() { [[ $(cat "$ggml_dir/SOURCE" 2>/dev/null) == "$ggml_sdist $ggml_sha256" ]]; }

# oneDNN 3.x for the Graph API contender (python/attnbench_contenders/onednn_graph.py): PyPI's CPU
# build with GNU OpenMP threads (the onednn wheels are SYCL builds), installed under its own prefix
# .venv/onednn/ so that CMake's search for Debian's oneDNN 2.6 (the C++ window's) never meets it.
onednn_wheel=onednn-cpu-gomp==2023.2.0
onednn_sha256=2f22a54d6a890ed14bfa185d42a4be65d8b5b1df85dc1f0f3a9abe31620416fb
onednn_dir=$venv/onednn
onednn_current() { [[ $(cat "$onednn_dir/SOURCE" 2>/dev/null) == "$onednn_wheel $onednn_sha256" ]]; }

if [[ ${1:-} == --check ]]; then
  status=0
  [[ ${#missing[@]} -eq 0 ]] || { echo "missing packages: ${missing[*]}"; status=1; }
  venv_current || { echo "$venv/ is missing or older than requirements.txt"; status=1; }
  ggml_current || { echo "$ggml_dir/ is missing or not built from $ggml_sdist"; status=1; }
  onednn_current || { echo "$onednn_dir/ is missing or not $onednn_wheel"; status=1; }
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

if ggml_current; then
  echo "setup: $ggml_dir/ current ($ggml_sdist)"
else
  echo "setup: building ggml's CPU backend from $ggml_sdist (PyPI) into $ggml_dir/"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$venv/bin/python" -m pip download --quiet --no-deps --no-binary :all: "${ggml_sdist/_python-/-python==}" -d "$work"
  echo "$ggml_sha256  $work/$ggml_sdist.tar.gz" | sha256sum --check --quiet
  tar -xzf "$work/$ggml_sdist.tar.gz" -C "$work" "$ggml_sdist/vendor/llama.cpp"
  src=$work/$ggml_sdist/vendor/llama.cpp
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_NATIVE=ON -DGGML_CCACHE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF > "$work/configure.log" 2>&1 ||
    { tail -30 "$work/configure.log"; exit 1; }
  cmake --build "$work/build" --target ggml-cpu > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
  rm -rf "$ggml_dir"
  mkdir -p "$ggml_dir/lib"
  cp -a "$work/build/bin/"libggml*.so* "$ggml_dir/lib/"
  cp -r "$src/ggml/include" "$ggml_dir/include"
  cp "$src/LICENSE" "$ggml_dir/LICENSE"
  echo "$ggml_sdist $ggml_sha256" > "$ggml_dir/SOURCE"
fi

if onednn_current; then
  echo "setup: $onednn_dir/ current ($onednn_wheel)"
else
  echo "setup: installing $onednn_wheel (PyPI) into $onednn_dir/"
  wheels=$(mktemp -d)
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
    "$onednn_wheel" -d "$wheels"
  echo "$onednn_sha256  $(ls "$wheels"/*.whl)" | sha256sum --check --quiet
  rm -rf "$onednn_dir"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --prefix "$onednn_dir" \
    "$wheels"/*.whl
  rm -rf "$wheels"
  echo "$onednn_wheel $onednn_sha256" > "$onednn_dir/SOURCE"
fi
