#!/usr/bin/env bash
# The regression gate must see a regression it was not told about: the gate
# experiment (experiments/gate.json) is run with SnapKV's budget silently halved (256 -> 128 tokens
# while its label and recorded spec still say 256, as a bug in the policy
# would leave them), and `kvbench compare` against the committed baseline
# (results/baseline/gate) must fail, on snapkv 256. The unchanged rerun
# passing is `scripts/check_baseline.sh BUILD_DIR gate`. Exit 0 when the gate failed as it should, 1
# when it passed the weakened run, 77 skipped (no default model).
# Usage: scripts/check_gate_power.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/baseline_common.sh"
# policies/4 is "snapkv 256" in experiments/gate.json.
grep -q '"spec": "snapkv:budget=256", "label": "snapkv 256"' experiments/gate.json ||
  { echo "error: experiments/gate.json: no 'snapkv 256' row to weaken" >&2; exit 2; }
"$build/kvbench" run experiments/gate.json --set "model=$model" \
  --set 'policies.4={"spec": "snapkv:budget=128", "label": "snapkv 256"}' --out "$out" --quiet
run=$(echo "$out"/gate-*)
# What a silent bug leaves behind: the records still name the old spec.
sed -i 's/snapkv:budget=128/snapkv:budget=256/g' "$run"/cells/*.json "$run"/config.json
set +e
"$build/kvbench" compare results/baseline/gate "$run" --tolerance 0 > "$out/compare.md"
code=$?
set -e
cat "$out/compare.md"
if [ "$code" -ne 1 ]; then
  echo "FAIL: the gate let SnapKV at half its budget pass (exit $code)"
  exit 1
fi
grep -q '^| snapkv 256 | .* | REGRESSED |$' "$out/compare.md" ||
  { echo "FAIL: the gate failed, but not on snapkv 256"; exit 1; }
echo "ok: the gate failed on SnapKV at half its budget"
