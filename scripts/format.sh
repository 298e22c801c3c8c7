#!/usr/bin/env bash
# The C++ code's format (.clang-format, Debian's clang-format 14).
#   scripts/format.sh               format every C++ file of the tree in place
#   scripts/format.sh --check       list the files clang-format would change; exit 1 if any
#   scripts/format.sh --check F...  the same for the files F (the format test's self-check)
set -euo pipefail
cd "$(dirname "$0")/.."
style="--style=file:$PWD/.clang-format"

check=false
if [[ ${1:-} == --check ]]; then
  check=true
  shift
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(find include src apps bench tests testing fuzz python -type f \( -name '*.cpp' -o -name '*.hpp' \) | sort)
fi

if ! $check; then
  clang-format "$style" -i "${files[@]}"
  exit 0
fi
unformatted=()
for f in "${files[@]}"; do
  clang-format "$style" --dry-run -Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if [[ ${#unformatted[@]} -gt 0 ]]; then
  echo "not formatted (run scripts/format.sh): ${unformatted[*]}"
  exit 1
fi
echo "format: ${#files[@]} files formatted"
