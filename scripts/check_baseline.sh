#!/usr/bin/env bash
# The regression gate the tests run: an experiment (quick by default, or
# gate) rerun and compared with its committed baseline (results/baseline/
# NAME). Exit 0 no regression, 1 a regression, 77 skipped (no default
# model; ctest reports it as skipped).
# Usage: scripts/check_baseline.sh BUILD_DIR [NAME]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
name=${2:-quick}
model=${KVBENCH_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ ! -f "$model" ]; then
  echo "skipped: $model not found (run scripts/setup.sh)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$root"
"$build/kvbench" run "experiments/$name.json" --set "model=$model" --out "$out" --quiet
"$build/kvbench" compare "results/baseline/$name" "$out/$name"-* --tolerance 0
