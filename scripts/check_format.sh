#!/usr/bin/env bash
# The format check: every C++ file git tracks must match .clang-format
# (clang-format --dry-run -Werror; Debian's clang-format 14, which set-up
# installs). Fix a failure with `clang-format -i FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "error: clang-format not found (scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cc' '*.hpp')
[ "${#files[@]}" -gt 0 ] || { echo "error: no C++ files tracked by git here" >&2; exit 2; }
bad=0
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || { echo "not formatted: $f"; bad=$((bad + 1)); }
done
if [ "$bad" -gt 0 ]; then
  echo "error: $bad of ${#files[@]} files differ from .clang-format (clang-format -i FILE)" >&2
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format"
