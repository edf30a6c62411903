#!/bin/bash
# The kvpress cross-check of docs/FINDINGS.md in one command: 24 instances
# (passkey, niah_single, niah_multikey at 1k tokens, 8 each, seed 7), every
# policy both tools implement, budgets 25% and 50% of the document, on the
# default model. kvbench never installs kvpress: pass the python of a venv
# made outside the repo (pip install kvpress gguf there).
#
#   scripts/findings_kvpress.sh /path/to/venv/bin/python [out-dir]
#
# Writes OUT/rows.jsonl (one line per instance, policy and budget; a rerun
# resumes it) and OUT/table.md (scripts/kvpress_table.py). Default OUT:
# results/findings/kvpress.
# KVPRESS_POLICIES: the policies (kvpress_crosscheck.py --policies; default:
# its default set). KVPRESS_THREADS: threads of both tools (default 2).
# KVPRESS_SAMPLES: instances per task (default 8). KVPRESS_INSTANCES: keep
# only the first N generated instances (default: all). KVPRESS_OUT_NAME:
# write OUT/rows-NAME.jsonl and OUT/table-NAME.md instead (a separate file
# for a policy run on its own, e.g. kvzip).
set -euo pipefail
python=${1:?usage: scripts/findings_kvpress.sh /path/to/venv/bin/python [out-dir]}
. "$(dirname "$0")/findings_common.sh" kvpress "${2:-}"
[ -x "$python" ] || { echo "error: $python: not an executable" >&2; exit 2; }
"$python" -c 'import torch, transformers, gguf, kvpress' 2>/dev/null ||
  { echo "error: $python: needs kvpress and gguf (pip install kvpress gguf in the venv)" >&2; exit 2; }
instances=$(mktemp)
trap 'rm -f "$instances"' EXIT
name=${KVPRESS_OUT_NAME:+-$KVPRESS_OUT_NAME}
"$kvbench" dataset generate -m "$model" --task passkey,niah_single,niah_multikey --lengths 1k \
  --samples "${KVPRESS_SAMPLES:-8}" --seed 7 -o "$instances" >&2
if [ -n "${KVPRESS_INSTANCES:-}" ]; then
  head -n "$KVPRESS_INSTANCES" "$instances" > "$instances.head" && mv "$instances.head" "$instances"
fi
"$python" "$here/scripts/kvpress_crosscheck.py" --instances "$instances" --out "$out/rows$name.jsonl" \
  --kvbench "$kvbench" --model "$model" --threads "${KVPRESS_THREADS:-2}" \
  ${KVPRESS_POLICIES:+--policies "$KVPRESS_POLICIES"}
python3 "$here/scripts/kvpress_table.py" "$out/rows$name.jsonl" > "$out/table$name.md.tmp"
mv "$out/table$name.md.tmp" "$out/table$name.md"
cat "$out/table$name.md"
