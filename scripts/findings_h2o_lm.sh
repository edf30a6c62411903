#!/bin/bash
# docs/FINDINGS.md 3.1.1, H2O (Zhang et al. 2023) on its own kind of task:
# language modelling of prose, where what matters is spread over the text
# (no needle). Perplexity of 4 Debian Reference texts of 4k tokens (`kvbench
# dataset generate --task ppl --lengths 4k --samples 4 --seed 3`), each read
# through the cache in chunks of 64 tokens with a budget of 20% of the text
# (780 entries per head, of a 3,900-token window): full, h2o (heavy hitters + recent, half each), the
# recent tokens alone, tova, and StreamingLLM's sinks + recent.
#
#   scripts/findings_h2o_lm.sh [out-dir]   (default results/findings/h2o-lm)
#
# Writes OUT/rows.jsonl (kvbench perplexity --json per cache and text) and
# OUT/table.md: per cache the token-weighted perplexity over the 4 texts and
# its ratio to the full cache's.
set -euo pipefail
. "$(dirname "$0")/findings_common.sh" h2o-lm "${1:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvbench" dataset generate -m "$model" --task ppl --lengths 4k --samples 4 --seed 3 \
  -o "$tmp/ppl.jsonl" >&2
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
for i, l in enumerate(open(tmp + "/ppl.jsonl")):
    open(f"{tmp}/text{i}.txt", "w").write(json.loads(l)["context"])
PY
: > "$tmp/rows.jsonl"
for spec in full h2o:budget=780 window:budget=780 tova:budget=780 streaming:budget=780; do
  for text in "$tmp"/text*.txt; do
    echo "perplexity: $spec $(basename "$text")" >&2
    "$kvbench" perplexity -m "$model" -t 2 --fast --file "$text" --ctx 3900 --chunk 64 \
      --policy "$spec" --json 2>/dev/null |
      python3 -c 'import json, sys; j = json.load(sys.stdin); j["text"] = sys.argv[1]; print(json.dumps(j))' \
        "$(basename "$text")" >> "$tmp/rows.jsonl"
  done
done
python3 - "$tmp/rows.jsonl" "$out" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = sys.argv[2]
agg = {}
for r in rows:
    a = agg.setdefault(r["policy"], [0.0, 0, []])
    a[0] += r["nll"] * r["scored"]
    a[1] += r["scored"]
    a[2].append(r["ppl"])
full = math.exp(agg["full"][0] / agg["full"][1])
lines = ["| cache | perplexity (4 texts, token-weighted) | / full | per text |",
         "|---|---:|---:|---|"]
for p, (s, n, each) in agg.items():
    ppl = math.exp(s / n)
    lines.append(f"| `{p}` | {ppl:.3f} | {ppl / full:.3f} | " + ", ".join(f"{x:.2f}" for x in each) + " |")
open(out + "/table.md", "w").write("\n".join(lines) + "\n")
with open(out + "/rows.jsonl", "w") as f:
    for r in rows:
        r.pop("file", None)
        r["memory"] = {"hot": r["memory"]["hot"]}  # the per-layer lists add nothing here
        f.write(json.dumps(r) + "\n")
print("\n".join(lines))
PY
