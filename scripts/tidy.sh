#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over the given files, or over the C++ files a
# change touched (against main), with the compile commands of build/.
#   scripts/tidy.sh [FILE...]
# Needs a configured build (cmake writes build/compile_commands.json).
set -euo pipefail
cd "$(dirname "$0")/.."
clang_tidy=${CLANG_TIDY:-clang-tidy-16}
[ -f build/compile_commands.json ] || { echo "tidy.sh: configure a build first (cmake -S . -B build)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  mapfile -t files < <(git diff --name-only main -- '*.cc' | grep -v '^tests/layers/fixture/' || true)
else
  files=("$@")
fi
[ ${#files[@]} -ne 0 ] || { echo "tidy.sh: nothing to check"; exit 0; }
"$clang_tidy" -p build --quiet "${files[@]}"
