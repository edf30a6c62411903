#!/bin/bash
# One findings experiment of docs/FINDINGS.md from its config: runs
# experiments/findings/NAME.json into a run folder under $FINDINGS_RUNS (a
# new temporary folder by default; run folders themselves are never
# committed) and stores it in results/findings/NAME/ (or OUT) with
# scripts/store_run.sh: the per-cell data packed (config.json, meta.json,
# cells.jsonl.zst) and the tables `kvbench report` regenerates from them
# (table.md, table.csv, report.md), plus per_task.md (report.md's score per
# task). `build/kvbench report results/findings/NAME` regenerates the tables
# and writes cells.csv (one row per cell) and the figures beside them.
#
#   scripts/findings_run.sh NAME [out-dir]
#   FINDINGS_RESUME=RUN_FOLDER scripts/findings_run.sh NAME   (finish a stopped run)
#   NAME: any experiments/findings/NAME.json (h2o, snapkv, snapkv-window, allocation,
#   allocation-window8, quantization, kivi-ablation, quest-equal, quest-offload, restore-rule, ruler,
#   sinks-needles, cam)
set -euo pipefail
name=${1:?usage: scripts/findings_run.sh NAME [out-dir]}
[[ $name =~ ^[a-z0-9_-]{1,40}$ ]] || { echo "error: NAME '$name': letters, digits, - and _ only" >&2; exit 2; }
. "$(dirname "$0")/findings_common.sh" "$name" "${2:-}"
config=$here/experiments/findings/$name.json
[ -f "$config" ] || { echo "error: $config: no such experiment" >&2; exit 2; }
if [ -n "${FINDINGS_RESUME:-}" ]; then  # a run folder of this experiment that was stopped
  folder=$FINDINGS_RESUME
  "$kvbench" run --resume "$folder" --quiet
else
  runs=${FINDINGS_RUNS:-$(mktemp -d)}
  "$kvbench" run "$config" --set "model=$model" --out "$runs" --quiet
  folder=$(ls -d "$runs"/findings-"$name"-* | tail -1)
fi
KVBENCH_BIN=$kvbench "$here/scripts/store_run.sh" "$folder" "$out" > /dev/null
awk '/^## Score per task/ {on = 1} /^## / && !/Score per task/ {on = 0} on' "$out/report.md" \
  > "$out/per_task.md.tmp" && mv "$out/per_task.md.tmp" "$out/per_task.md"
echo "results: $out (run folder: $folder)"
