#!/usr/bin/env bash
# Builds oneTBB with ThreadSanitizer into build-tsan-tbb/install, for the `tsan` preset.
#   scripts/tsan_tbb.sh     (idempotent: does nothing when the same version is already built)
#
# Why: Debian's libtbb.so is not instrumented, so TSan does not see the synchronisation inside it
# (task spawn, steal, the wait for a parallel_for) and reports every hand-over of data between the
# thread that spawns a task and the one that runs it as a race: hundreds of reports, on
# attention.cpp, the workspace and the kernels as much as on TBB's headers. A suppression that hid
# them would hide real races in the same stacks. The fix is a TBB that TSan can see: the source of
# the very version installed (so its headers match), from the system's own Debian sources, built
# with oneTBB's TBB_SANITIZE=thread. With it the threaded tests report nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

out=build-tsan-tbb
version=$(dpkg-query -W -f='${Version}' libtbb-dev)
source_package=$(dpkg-query -W -f='${source:Package}' libtbb-dev)
if [[ -f $out/install/VERSION && $(cat "$out/install/VERSION") == "$version" ]]; then
  echo "tsan_tbb: oneTBB $version with TSan already built in $out/install"
  exit 0
fi

sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
if ! command -v dpkg-source >/dev/null; then  # apt-get source unpacks with it
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends dpkg-dev
fi

# The source package, fetched through a private apt state (its own source list, package lists
# and cache under $out/apt), so the system's apt configuration and lists stay as they are. The
# list is the system's own Debian entries with their type changed to deb-src.
rm -rf "$out"
mkdir -p "$out/apt/sources.list.d" "$out/apt/lists/partial" "$out/apt/cache/archives/partial" "$out/src"
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f $f ]] && sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$out/apt/sources.list.d/$(basename "$f")"
done
sed -nE 's/^deb[[:space:]]+/deb-src /p' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
  2>/dev/null > "$out/apt/sources.list" || true
apt=(-o "Dir::Etc::SourceList=$PWD/$out/apt/sources.list"
     -o "Dir::Etc::SourceParts=$PWD/$out/apt/sources.list.d"
     -o "Dir::State::Lists=$PWD/$out/apt/lists"
     -o "Dir::Cache=$PWD/$out/apt/cache"
     -o "APT::Sandbox::User=$(id -un)")
echo "tsan_tbb: fetching the source of $source_package $version"
apt-get "${apt[@]}" update -qq
(cd "$out/src" && apt-get "${apt[@]}" source -qq "$source_package=$version" >/dev/null)
src=$(find "$out/src" -mindepth 1 -maxdepth 1 -type d | head -1)

echo "tsan_tbb: building $src with TBB_SANITIZE=thread"
cmake -S "$src" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTBB_SANITIZE=thread \
  -DTBB_TEST=OFF -DTBBMALLOC_BUILD=OFF -DTBB_STRICT=OFF -DTBB_DISABLE_HWLOC_AUTOMATIC_SEARCH=ON \
  -DCMAKE_INSTALL_PREFIX="$PWD/$out/install" >/dev/null
cmake --build "$out/build" -j "$(nproc)" >/dev/null
cmake --install "$out/build" >/dev/null
echo "$version" > "$out/install/VERSION"
echo "tsan_tbb: installed in $out/install"
