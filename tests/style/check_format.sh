#!/usr/bin/env bash
# The house format (STYLE.md habit 11): every C/CUDA source and header must be
# exactly what clang-format makes of it with the repository's .clang-format.
# Fix with: clang-format -i FILE
set -uo pipefail
cd "$(dirname "$0")/../.."
bad=0
while IFS= read -r -d '' f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=1
  fi
done < <(find base daemon fuse gpu scene protocol config bench tests examples -type f \
           \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
           -not -path '*/node_modules/*' -print0)
[ $bad = 0 ] && echo "format: all files match .clang-format"
exit $bad
