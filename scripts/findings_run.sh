#!/bin/bash
# One findings experiment of docs/FINDINGS.md from its config: runs
# experiments/findings/NAME.json into a run folder under $FINDINGS_RUNS (a
# new temporary folder by default; run folders are never committed) and
# copies its figures — the table (markdown and CSV), the score per task
# (report.md's section), one row per cell (cells.csv: depth, score, needle
# held / attended; scripts/findings_cells.py) and meta.json (commit, model
# sha256, machine) — to results/findings/NAME/ (or OUT).
#
#   scripts/findings_run.sh NAME [out-dir]
#   FINDINGS_RESUME=RUN_FOLDER scripts/findings_run.sh NAME   (finish a stopped run)
#   NAME: any experiments/findings/NAME.json (h2o, snapkv, snapkv-window, allocation,
#   allocation-window8, quantization, kivi-ablation, quest-equal, quest-offload, restore-rule, ruler,
#   sinks-needles)
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
for f in table.md table.csv meta.json; do
  cp "$folder/$f" "$out/$f.tmp" && mv "$out/$f.tmp" "$out/$f"
done
awk '/^## Score per task/ {on = 1} /^## / && !/Score per task/ {on = 0} on' "$folder/report.md" \
  > "$out/per_task.md.tmp" && mv "$out/per_task.md.tmp" "$out/per_task.md"
python3 "$here/scripts/findings_cells.py" "$folder" > "$out/cells.csv.tmp" && mv "$out/cells.csv.tmp" "$out/cells.csv"
echo "figures: $out (run folder: $folder)"
