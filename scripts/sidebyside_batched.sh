#!/bin/bash
# Batched decoding side by side: kvbench's `bench -b` against llama.cpp's
# llama-batched-bench (S_TG: tokens generated per second over all sequences),
# on one model, in interleaved rounds so that drift on a shared machine hits
# both tools. kvbench never builds llama.cpp: pass the path of a
# llama-batched-bench you built (docs/PERFORMANCE.md says how).
#
#   scripts/sidebyside_batched.sh /path/to/llama-batched-bench [model.gguf] [rounds] [threads] [batches] [depths] [tg]
#
# Defaults: rounds 3, threads 2, batches 8,32, depths 0,4096, tg 128. Each
# round, llama-batched-bench runs -npp DEPTHS -ntg TG -npl BATCHES -pps (one
# DEPTH-token prompt prefilled, then copied into every sequence's own KV
# stream, f16 K/V; then TG steps of one token per sequence), and kvbench runs
# `bench -p 0 -n TG -d DEPTHS -b BATCHES -r 1 --kv f16` (each sequence on its
# own copy of one DEPTH-token context's cache, f16 K/V, then TG steps of
# step_batch). Both time only the TG steps; -pps keeps llama.cpp from
# prefilling BATCH x DEPTH tokens each round, which the TG steps do not see. Prints both tools' per-round
# tokens/s, their medians, and the median of the per-round ratios kvbench /
# llama.cpp.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: scripts/sidebyside_batched.sh /path/to/llama-batched-bench [model.gguf] [rounds] [threads] [batches] [depths] [tg]"
batched_bench=${1:?$usage}
model=${2:-$here/models/SmolLM2-135M-Instruct.Q4_1.gguf}
rounds=${3:-3}
threads=${4:-2}
batches=${5:-8,32}
depths=${6:-0,4096}
tg=${7:-128}
list='^[0-9]{1,6}(,[0-9]{1,6})*$'
[[ $batches =~ $list && $depths =~ $list ]] ||
  { echo "error: batches '$batches' and depths '$depths': comma-separated whole numbers" >&2; exit 2; }
[[ $rounds =~ ^[0-9]{1,3}$ && $threads =~ ^[0-9]{1,4}$ && $tg =~ ^[0-9]{1,5}$ &&
   $rounds -ge 1 && $threads -ge 1 && $tg -ge 1 ]] ||
  { echo "error: rounds (1-999), threads (1-9999) and tg (1-99999) must be whole numbers in range" >&2; exit 2; }
kvbench=$here/build/kvbench
[ -x "$batched_bench" ] || { echo "error: $batched_bench: not an executable" >&2; exit 2; }
[ -x "$kvbench" ] || { echo "error: $kvbench: not built (run scripts/setup.sh)" >&2; exit 2; }
[ -f "$model" ] || { echo "error: $model: no such model file" >&2; exit 2; }
model=$(realpath "$model")  # llama-batched-bench runs from its own directory
# llama.cpp's context: every sequence's stream holds its prompt and its tokens.
ctx=$(python3 -c 'import sys; print(max(int(b) * (int(d) + int(sys.argv[3])) for b in sys.argv[1].split(",") for d in sys.argv[2].split(",")))' "$batches" "$depths" "$tg")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bench_dir=$(dirname "$batched_bench")
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds" >&2
  (cd "$bench_dir" && LD_LIBRARY_PATH=$bench_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
     "$batched_bench" -m "$model" -t "$threads" -tb "$threads" -c "$ctx" -b 2048 -ub 512 \
       -npp "$depths" -ntg "$tg" -npl "$batches" -pps --output-format jsonl 2>/dev/null) |
    python3 -c '
import json, sys
for line in sys.stdin:
    if line.startswith("{"):
        j = json.loads(line)
        print("llama", sys.argv[1], j["pp"], j["pl"], j["speed_tg"])' "$r" >> "$log"
  "$kvbench" bench -m "$model" -t "$threads" -p 0 -n "$tg" -d "$depths" -b "$batches" -r 1 --kv f16 -o csv 2>/dev/null |
    python3 -c '
import csv, sys
for row in csv.DictReader(sys.stdin):
    print("kvbench", sys.argv[1], row["n_depth"], row["n_batch"], row["median_ts"])' "$r" >> "$log"
done
python3 - "$log" "$tg" <<'PY'
import collections, statistics, sys
ts = collections.defaultdict(dict)  # (depth, batch) -> {(tool, round): t/s}
for line in open(sys.argv[1]):
    tool, rnd, d, b, v = line.split()
    ts[(int(d), int(b))][(tool, int(rnd))] = float(v)
print("| test | llama-batched-bench S_TG t/s (median) | kvbench t/s (median) | ratio (median of rounds) | ratio range |")
print("| --- | ---: | ---: | ---: | ---: |")
for (d, b) in sorted(ts):
    x = ts[(d, b)]
    rounds = sorted({r for _, r in x})
    both = [r for r in rounds if ("llama", r) in x and ("kvbench", r) in x]
    if not both:
        continue
    l = [x[("llama", r)] for r in both]
    k = [x[("kvbench", r)] for r in both]
    ratios = [x[("kvbench", r)] / x[("llama", r)] for r in both]
    name = f"tg{sys.argv[2]}" + (f" @ d{d}" if d else "") + f" b{b}"
    print(f"| {name} | {statistics.median(l):.1f} | {statistics.median(k):.1f} | {statistics.median(ratios):.2f}x "
          f"| {min(ratios):.2f}–{max(ratios):.2f} |")
PY
