#!/usr/bin/env bash
# Formats Strata's C and C++ with .clang-format, or checks that it is formatted.
#   scripts/format.sh           rewrite every file that is not formatted
#   scripts/format.sh --check   list the files that are not, exit 1 if any (the
#                               test suite runs this: Format.TreeIsFormatted)
# One clang-format version (16, from Debian 12) so that every machine agrees.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format-16}
command -v "$clang_format" >/dev/null || { echo "format.sh: $clang_format not found (scripts/install_deps.sh installs it)" >&2; exit 2; }

# Sources git tracks or would (new files too), less fixtures whose exact lines
# a test reads.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.c' 2>/dev/null | grep -v '^tests/layers/fixture/' ||
                     find support compiler vm kernels serialization apps tests benchmarks examples \
                       \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) -not -path 'tests/layers/fixture/*')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    "$clang_format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -ne 0 ]; then
    printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "formatted: ${#files[@]} files"
  exit 0
fi
"$clang_format" -i "${files[@]}"
