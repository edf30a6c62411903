#!/bin/bash
# Side-by-side speed of kvbench (fast and exact) and Hugging Face
# transformers on CPU with the same GGUF weights (dequantized to f32 by
# transformers' GGUF loader: PyTorch's f32 GEMM), in interleaved rounds so
# that drift on a shared machine hits every tool. kvbench never installs
# PyTorch: pass the python of a venv you made outside the repo
# (docs/PERFORMANCE.md says how).
#
#   scripts/vs_transformers.sh /path/to/venv/bin/python [model.gguf] [rounds] [threads] [prompts] [gen]
#
# Each round runs ppN for each N of the comma-separated prompt lengths
# (default 512,2048) and tgGEN (default 64, at depth 0) in transformers,
# kvbench bench, kvbench bench --attention bf16 and kvbench bench --exact,
# three repetitions each. Prints each
# tool's per-round medians, their medians over the rounds, and the medians of
# the per-round ratios kvbench / transformers.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
python=${1:?usage: scripts/vs_transformers.sh /path/to/venv/bin/python [model.gguf] [rounds] [threads] [prompts] [gen]}
model=${2:-$here/models/SmolLM2-135M-Instruct.Q4_1.gguf}
rounds=${3:-3}
threads=${4:-2}
prompts=${5:-512,2048}
gen=${6:-64}
[[ $prompts =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "error: prompts '$prompts': comma-separated token counts" >&2; exit 2; }
[[ $gen =~ ^[0-9]{1,5}$ && $rounds =~ ^[0-9]{1,3}$ && $threads =~ ^[0-9]{1,4}$ && $rounds -ge 1 && $threads -ge 1 ]] ||
  { echo "error: rounds (1-999), threads (1-9999) and gen (0-99999) must be whole numbers in range" >&2; exit 2; }
[[ $prompts =~ ^[0-9]{1,6}(,[0-9]{1,6})*$ ]] || { echo "error: prompts '$prompts': token counts of at most 6 digits" >&2; exit 2; }
kvbench=$here/build/kvbench
[ -x "$python" ] || { echo "error: $python: not an executable" >&2; exit 2; }
"$python" -c 'import torch, transformers, gguf, accelerate' 2>/dev/null ||
  { echo "error: $python: needs torch, transformers, gguf and accelerate (pip install them in the venv)" >&2; exit 2; }
[ -x "$kvbench" ] || { echo "error: $kvbench: not built (run scripts/setup.sh)" >&2; exit 2; }
[ -f "$model" ] || { echo "error: $model: no such model file" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds" >&2
  "$python" "$here/scripts/hf_bench.py" "$model" "$threads" "$r" "$prompts" "$gen" 2>/dev/null >> "$log"
  for mode in fast bf16 exact; do
    flag=(); [ $mode = exact ] && flag=(--exact); [ $mode = bf16 ] && flag=(--attention bf16)
    "$kvbench" bench -m "$model" -t "$threads" -p "$prompts" -n "$gen" -r 3 "${flag[@]}" -o csv 2>/dev/null |
      python3 -c '
import csv, sys
for row in csv.DictReader(sys.stdin):
    n_prompt, n_gen = int(row["n_prompt"]), int(row["n_gen"])
    test = "pp%d" % n_prompt if n_prompt > 0 else "tg%d" % n_gen
    print("kvbench %s,%s,%s,%s" % (sys.argv[2], sys.argv[1], test, row["median_ts"]))' "$r" "$mode" >> "$log"
  done
done
python3 - "$log" <<'PY'
import collections, statistics, sys
ts = collections.defaultdict(lambda: collections.defaultdict(list))  # test -> (tool, round) -> [t/s]
for line in open(sys.argv[1]):
    tool, rnd, test, v = line.strip().split(",")
    ts[test][(tool, rnd)].append(float(v))
tools = ["transformers", "kvbench fast", "kvbench bf16", "kvbench exact"]
print("| test | " + " | ".join(f"{t} t/s (rounds)" for t in tools) +
      " | fast / transformers | bf16 / transformers | exact / transformers |")
print("| --- |" + " ---: |" * (len(tools) + 3))
for test in sorted(ts, key=lambda t: (t[:2], int(t[2:]))):
    rounds = sorted({r for (_, r) in ts[test]}, key=int)
    per = {t: [statistics.median(ts[test][(t, r)]) for r in rounds if ts[test][(t, r)]] for t in tools}
    cells = [f"{statistics.median(per[t]):.1f} ({', '.join(f'{v:.0f}' for v in per[t])})" if per[t] else "—" for t in tools]
    ratios = []
    for t in tools[1:]:
        rs = [statistics.median(ts[test][(t, r)]) / statistics.median(ts[test][("transformers", r)])
              for r in rounds if ts[test][(t, r)] and ts[test][("transformers", r)]]
        ratios.append(f"{statistics.median(rs):.2f}x" if rs else "—")
    print(f"| {test} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
PY
