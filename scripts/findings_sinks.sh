#!/bin/bash
# docs/FINDINGS.md, "do heavy-hitter policies keep the first tokens unasked?":
# for 20 single-needle documents (2k tokens, essay haystack, seed 14) and each
# policy, `kvbench ask --json --kept` lists the document positions every layer
# and KV head keeps after compression; this prints, per policy, the share of
# heads that keep each of the first four positions, against the budget's share
# of the document (what a choice blind to position would keep).
#
#   scripts/findings_sinks.sh [out-dir]     (default results/findings/sinks)
set -euo pipefail
. "$(dirname "$0")/findings_common.sh" sinks "${1:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvbench" dataset generate --task niah_single:haystack=essay --lengths 2k --samples 20 --seed 14 \
  -o "$tmp/instances.jsonl" >&2
python3 - "$kvbench" "$model" "$tmp" "$out" <<'PY'
import json, os, subprocess, sys
kvbench, model, tmp, out = sys.argv[1:]
policies = ["h2o:budget=0.2", "tova:budget=0.2", "hybrid:budget=0.2", "snapkv:budget=0.2",
            "knorm:budget=0.2", "expected:budget=0.2"]
rows = []
for line in open(os.path.join(tmp, "instances.jsonl")):
    inst = json.loads(line)
    doc = os.path.join(tmp, "doc.txt")
    open(doc, "w").write(inst["context"])
    for spec in policies:
        cmd = [kvbench, "ask", "-m", model, "-t", "2", "--context", doc, "--policy", spec,
               "--question", inst["question"], "--answer-prefix", inst["answer_prefix"],
               "-n", "1", "--json", "--kept"]
        if inst.get("preamble"):
            cmd += ["--preamble", inst["preamble"]]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"error: kvbench ask {spec} on {inst['id']}: {r.stderr.strip()}")
        d = json.loads(r.stdout)["document"]
        heads = [set(h) for layer in d["kept"] for h in layer]
        rows.append({"id": inst["id"], "policy": spec, "tokens": d["tokens"],
                     "kept_share": sum(len(h) for h in heads) / (len(heads) * d["tokens"]),
                     "first4": [sum(p in h for h in heads) / len(heads) for p in range(4)],
                     "first_ids": d["token_ids"][:4]})
        print(f"{inst['id']} {spec}: first four kept by "
              + " ".join(f"{x:.2f}" for x in rows[-1]["first4"]), file=sys.stderr)
with open(os.path.join(out, "rows.jsonl"), "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
lines = ["| policy | documents | kept share of the document | heads keeping position 0 | 1 | 2 | 3 |",
         "|---|---:|---:|---:|---:|---:|---:|"]
for spec in policies:
    rs = [r for r in rows if r["policy"] == spec]
    n = len(rs)
    share = sum(r["kept_share"] for r in rs) / n
    firsts = [sum(r["first4"][p] for r in rs) / n for p in range(4)]
    lines.append(f"| `{spec}` | {n} | {share:.3f} | " + " | ".join(f"{x:.3f}" for x in firsts) + " |")
open(os.path.join(out, "table.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
