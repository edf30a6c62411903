#!/usr/bin/env bash
# The regression gate the tests run: an experiment (quick by default, or
# gate) rerun and compared with its committed baseline (results/baseline/
# NAME). Exit 0 no regression, 1 a regression, 77 skipped (no default
# model; ctest reports it as skipped).
# Usage: scripts/check_baseline.sh BUILD_DIR [NAME]
set -euo pipefail
. "$(dirname "$0")/baseline_common.sh"
name=${2:-quick}
"$build/kvbench" run "experiments/$name.json" --set "model=$model" --out "$out" --quiet
"$build/kvbench" compare "results/baseline/$name" "$out/$name"-* --tolerance 0
