#!/bin/bash
# Stores a finished run folder as committed results: its per-cell data packed
# (config.json, meta.json, cells.jsonl.zst) and what `kvbench report`
# regenerates from them (table.md, table.csv, report.md; with --plots the
# figures too). OUT is replaced whole, atomically (built beside it, then
# renamed), so an interrupted store leaves the old results.
#
#   scripts/store_run.sh RUN_FOLDER OUT [--plots]
#
# RUN_FOLDER is packed in place first when it still has cells/ (kvbench pack).
# Regenerate a stored folder's tables: build/kvbench report OUT
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
kvbench=${KVBENCH_BIN:-$here/build/kvbench}
run=${1:?usage: scripts/store_run.sh RUN_FOLDER OUT [--plots]}
out=${2:?usage: scripts/store_run.sh RUN_FOLDER OUT [--plots]}
plots=${3:-}
[ -z "$plots" ] || [ "$plots" = --plots ] || { echo "error: '$plots': the third argument can only be --plots" >&2; exit 2; }
[ -d "$run" ] || { echo "error: $run: no such run folder" >&2; exit 2; }
[ -f "$run/cells.jsonl.zst" ] || "$kvbench" pack "$run" > /dev/null
stage=$out.store.tmp
rm -rf "$stage"
mkdir -p "$stage"
cp "$run/config.json" "$run/meta.json" "$run/cells.jsonl.zst" "$stage/"
"$kvbench" report "$stage" > /dev/null
# Only what the committed-results rule keeps: the packed cells and the tables
# (everything else is one `kvbench report` away).
keep=(config.json meta.json cells.jsonl.zst table.md table.csv report.md)
[ -n "$plots" ] && keep+=(plots)
for f in "$stage"/* "$stage"/.[!.]*; do
  [ -e "$f" ] || continue
  name=$(basename "$f")
  [[ " ${keep[*]} " == *" $name "* ]] || rm -rf "$f"
done
rm -rf "$out.old"
[ -e "$out" ] && mv "$out" "$out.old"
mv "$stage" "$out"
rm -rf "$out.old"
echo "stored: $out (from $run)"
