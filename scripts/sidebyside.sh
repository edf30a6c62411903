#!/bin/bash
# Side-by-side throughput of kvbench and llama.cpp's llama-bench on one model,
# in interleaved rounds so that drift on a shared machine hits both tools.
# kvbench never builds llama.cpp: pass the path of a llama-bench you built
# (docs/PERFORMANCE.md says how).
#
#   scripts/sidebyside.sh /path/to/llama-bench [model.gguf] [rounds] [threads] [kv types] [depths]
#
# Each round runs pp512 and tg128 at each depth of the comma-separated list
# (default 0,4096; depth + 512 must fit the model's context in kvbench) with
# -r 3 in each tool, for each KV type of the comma-separated list (default
# f16, llama-bench's default): f16 (kvbench --kv f16), q8_0 (llama-bench -ctk q8_0
# -ctv q8_0 -fa 1 against kvbench's full+int8: 8-bit codes, one f16 scale per
# 32) and q4_0 (against full+int4: 4-bit codes, f16 min and step per 32;
# q4_0 stores one f16 scale per 32). Prints both tools' per-round tokens/s,
# their medians over the rounds, and the median of the per-round ratios
# kvbench / llama.cpp.
#
# FA (environment) sets llama-bench's flash attention for the f16 rows: on
# (default: its best path at depth 0, and what `auto` picks on a CPU), off, or
# on,off (both in each round; the ratio is then against the faster of the two
# in that round, llama.cpp's best path per test). Quantized KV types always run
# with -fa on: llama.cpp needs it for a quantized V.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llama_bench=${1:?usage: scripts/sidebyside.sh /path/to/llama-bench [model.gguf] [rounds] [threads] [kv types] [depths]}
model=${2:-$here/models/SmolLM2-135M-Instruct.Q4_1.gguf}
rounds=${3:-5}
threads=${4:-2}
kv_types=${5:-f16}
depths=${6:-0,4096}
fa=${FA:-on}
[[ $fa =~ ^(on|off|on,off|off,on)$ ]] || { echo "error: FA '$fa': on, off or on,off" >&2; exit 2; }
[[ $depths =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "error: depths '$depths': comma-separated token counts" >&2; exit 2; }
[[ $rounds =~ ^[0-9]{1,3}$ && $threads =~ ^[0-9]{1,4}$ && $rounds -ge 1 && $threads -ge 1 ]] ||
  { echo "error: rounds (1-999) and threads (1-9999) must be whole numbers in range" >&2; exit 2; }
kvbench=$here/build/kvbench
[ -x "$llama_bench" ] || { echo "error: $llama_bench: not an executable" >&2; exit 2; }
[ -x "$kvbench" ] || { echo "error: $kvbench: not built (run scripts/setup.sh)" >&2; exit 2; }
[ -f "$model" ] || { echo "error: $model: no such model file" >&2; exit 2; }
model=$(realpath "$model")  # llama-bench runs from its own directory
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bench_dir=$(dirname "$llama_bench")
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds" >&2
  for kv in ${kv_types//,/ }; do
    case $kv in
      f16) llama_kv=(-fa "$fa"); kvbench_kv=(--kv f16) ;;
      q8_0) llama_kv=(-ctk q8_0 -ctv q8_0 -fa on); kvbench_kv=(--policy full+int8) ;;
      q4_0) llama_kv=(-ctk q4_0 -ctv q4_0 -fa on); kvbench_kv=(--policy full+int4) ;;
      *) echo "error: KV type '$kv': f16, q8_0 or q4_0" >&2; exit 2 ;;
    esac
    # llama-bench CSV: flash_attn, n_prompt, n_gen, n_depth and avg_ts by column name.
    (cd "$bench_dir" && LD_LIBRARY_PATH=$bench_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
       "$llama_bench" -m "$model" -t "$threads" -p 512 -n 128 -d "$depths" -r 3 "${llama_kv[@]}" -o csv 2>/dev/null) |
      python3 -c '
import csv, sys
for row in csv.DictReader(sys.stdin):
    fa = "1" if row.get("flash_attn", "").lower() in ("1", "true", "on", "enabled") else "0"
    print("llama-fa" + fa, sys.argv[1], sys.argv[2], row["n_prompt"], row["n_gen"], row["n_depth"], row["avg_ts"])' "$r" "$kv" >> "$log"
    "$kvbench" bench -m "$model" -t "$threads" -p 512 -n 128 -d "$depths" -r 3 "${kvbench_kv[@]}" -o csv 2>/dev/null |
      python3 -c '
import csv, sys
for row in csv.DictReader(sys.stdin):
    print("kvbench", sys.argv[1], sys.argv[2], row["n_prompt"], row["n_gen"], row["n_depth"], row["avg_ts"])' "$r" "$kv" >> "$log"
  done
done
python3 - "$log" <<'PY'
import collections, statistics, sys
ts = collections.defaultdict(dict)  # (test) -> {(tool, round): t/s}
for line in open(sys.argv[1]):
    tool, rnd, kv, p, n, d, v = line.split()
    name = (f"pp{p}" if int(p) else f"tg{n}") + (f" @ d{d}" if int(d) else "") + f" kv {kv}"
    ts[name][(tool, int(rnd))] = float(v)
med = lambda d, tool, rounds: (f"{statistics.median(x):.1f}" if (x := [d[(tool, r)] for r in rounds if (tool, r) in d]) else "–")
print("| test | llama.cpp fa on t/s | llama.cpp fa off t/s | kvbench t/s | ratio to llama.cpp's faster (median of rounds) | ratio range |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
order = lambda k: (k.split(" kv ")[1], k.startswith("tg"), "@" in k, k)
for name in sorted(ts, key=order):
    d = ts[name]
    rounds = sorted({r for _, r in d})
    best = {r: max(d.get(("llama-fa1", r), 0.0), d.get(("llama-fa0", r), 0.0)) for r in rounds}
    ratios = [d[("kvbench", r)] / best[r] for r in rounds if best[r] > 0 and ("kvbench", r) in d]
    if not ratios:
        continue
    print(f"| {name} | {med(d, 'llama-fa1', rounds)} | {med(d, 'llama-fa0', rounds)} | {med(d, 'kvbench', rounds)} "
          f"| {statistics.median(ratios):.2f}x | {min(ratios):.2f}–{max(ratios):.2f} |")
PY
