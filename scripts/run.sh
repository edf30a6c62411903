#!/usr/bin/env bash
# The main job: set up (idempotent), then run the default experiment on the
# default model: the benchmark table, plots and report in results/.
# Extra arguments go to `kvbench run` (e.g. --set threads=4).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/kvbench run experiments/default.json "$@"
