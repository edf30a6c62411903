#!/usr/bin/env bash
# The regression gate the tests run: the quick experiment against the
# committed baseline (results/baseline/quick). Exit 0 no regression, 1 a
# regression, 77 skipped (no default model; ctest reports it as skipped).
# Usage: scripts/check_baseline.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
model=${KVBENCH_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ ! -f "$model" ]; then
  echo "skipped: $model not found (run scripts/setup.sh)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$root"
"$build/kvbench" run experiments/quick.json --set "model=$model" --out "$out" --quiet
"$build/kvbench" compare results/baseline/quick "$out"/quick-* --tolerance 0
