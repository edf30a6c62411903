#!/bin/bash
# docs/FINDINGS.md, StreamingLLM (Xiao et al. 2023): perplexity of one
# 24,576-token stream of prose (Debian Reference texts of `kvbench dataset
# generate --task ppl --lengths 7k --seed 3`, joined) read through
# each cache in chunks of 512, three times SmolLM2's 8,192-token training
# context. The full cache (positions past 8k), a 1,024-entry window without
# sinks and StreamingLLM's 4 sinks + window, each with original positions and
# with contiguous positions inside the cache (the paper's setting).
#
#   scripts/findings_streaming.sh [out-dir]   (default results/findings/streaming)
#
# Other models: KVBENCH_MODEL=FILE STREAM_TOKENS=N (a multiple of 1536; Gemma 3
# 270M: 49152, 1.5 times its 32,768-token context, as
# `scripts/findings_streaming.sh results/findings/streaming-gemma3`).
# STREAM_POLICIES="SPEC ..." replaces the list of caches (an ablation).
#
# Writes OUT/rows.jsonl (kvbench perplexity --json per cache) and OUT/table.md:
# the perplexity over the whole stream and over each third of it.
set -euo pipefail
. "$(dirname "$0")/findings_common.sh" streaming "${1:-}"
stream=${STREAM_TOKENS:-24576}
(( stream % 1536 == 0 )) || { echo "error: STREAM_TOKENS=$stream: not a multiple of 1536" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Texts of ~7k tokens, enough of them to fill the stream.
"$kvbench" dataset generate -m "$model" --task ppl --lengths 7k \
  --samples $(( stream / 6144 + 1 )) --seed 3 -o "$tmp/ppl.jsonl" >&2
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
texts = [json.loads(l)["context"] for l in open(tmp + "/ppl.jsonl")]
open(tmp + "/stream.txt", "w").write("\n\n".join(texts))
PY
: > "$tmp/rows.jsonl"
specs=${STREAM_POLICIES:-full window:budget=1024 streaming:budget=1024,sinks=4 \
    streaming:budget=1024,sinks=0,pos=contiguous streaming:budget=1024,sinks=4,pos=contiguous}
for spec in $specs; do
  echo "perplexity: $spec" >&2
  "$kvbench" perplexity -m "$model" -t 2 --fast --file "$tmp/stream.txt" --ctx "$stream" \
    --chunk 512 --policy "$spec" --beyond-context --json 2>/dev/null |
    python3 -c 'import json, sys; j = json.load(sys.stdin); print(json.dumps(j))' >> "$tmp/rows.jsonl"
done
python3 - "$tmp/rows.jsonl" "$out" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = sys.argv[2]
k = len(rows[0]["chunk_nll"]) * 512 // 3 // 1024  # a third of the stream, in k tokens
lines = [f"| cache | perplexity, whole stream | tokens 0-{k}k | {k}k-{2 * k}k | {2 * k}k-{3 * k}k"
         " | peak hot KV |",
         "|---|---:|---:|---:|---:|---:|"]
for r in rows:
    c = r["chunk_nll"]  # chunks of 512
    third = len(c) // 3
    ppl = [math.exp(sum(c[i * third:(i + 1) * third]) / third) for i in range(3)]
    lines.append(f"| `{r['policy']}` | {r['ppl']:.3f} | " + " | ".join(f"{p:.3f}" for p in ppl)
                 + f" | {r['peak_hot_bytes'] / 2**20:.1f} MiB |")
open(out + "/table.md", "w").write("\n".join(lines) + "\n")
with open(out + "/rows.jsonl", "w") as f:
    for r in rows:
        r.pop("file", None)
        f.write(json.dumps(r) + "\n")
print("\n".join(lines))
PY
