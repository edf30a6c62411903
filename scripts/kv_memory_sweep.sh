#!/bin/bash
# Throughput under a KV memory cap (issue 39): `kvbench bench --kv-memory`
# for each policy of the sweep at each depth and cap, into one JSON file with
# the machine it ran on, then the figure (scripts/kv_memory_figure.py).
#
#   scripts/kv_memory_sweep.sh OUT_DIR [model.gguf] [caps] [depths] [threads] [reps] [n_gen]
#
# Defaults: caps 512M,1G,2G; depths 4096,8064 (8064 + n_gen fits SmolLM2's
# 8k context); threads 2; reps 3; n_gen 32. Policies: the full cache (f32 and
# f16), H2O and SnapKV at 20% of the context, int8, int4, KIVI-2, and H2O at
# 20% with offload (evicted pages in host memory, restored by their key
# bounds: only the hot tier counts against the cap).
# Writes OUT_DIR/kv-memory.json and OUT_DIR/kv-memory.png; run nothing else
# on the machine meanwhile (timings).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/kv_memory_sweep.sh OUT_DIR [model.gguf] [caps] [depths] [threads] [reps] [n_gen]}
model=${2:-$here/models/SmolLM2-135M-Instruct.Q4_1.gguf}
caps=${3:-512M,1G,2G}
depths=${4:-4096,8064}
threads=${5:-2}
reps=${6:-3}
n_gen=${7:-32}
kvbench=${KVBENCH_BIN:-$here/build/kvbench}
[ -x "$kvbench" ] || { echo "error: $kvbench: not built (run scripts/setup.sh)" >&2; exit 2; }
[ -f "$model" ] || { echo "error: $model: no such model file" >&2; exit 2; }
policies=full,full+f16,h2o:budget=0.2,snapkv:budget=0.2,full+int8,full+int4,full+kivi2,h2o:budget=0.2+offload
mkdir -p "$out"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
"$kvbench" bench -m "$model" -p 0 -n "$n_gen" -d "$depths" -t "$threads" -r "$reps" \
  --kv-memory "$caps" --policy "$policies" -o json > "$rows"
python3 - "$rows" "$out/kv-memory.json" "$model" "$(git -C "$here" rev-parse --short HEAD)" <<'PY'
import json, os, subprocess, sys, datetime
rows = json.load(open(sys.argv[1]))
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
def field(name):
    for line in lscpu.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return ""
doc = {
    "what": "kvbench bench --kv-memory: tg tokens/s at the largest batch whose hot K/V fits each cap",
    "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ"),
    "commit": sys.argv[4],
    "model_file": os.path.basename(sys.argv[3]),
    "cpu": {"model_name": field("Model name"), "l3": field("L3 cache"), "cpus": field("CPU(s)")},
    "rows": rows,
}
tmp = sys.argv[2] + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
os.replace(tmp, sys.argv[2])
PY
python3 "$here/scripts/kv_memory_figure.py" "$out/kv-memory.json" "$out/kv-memory.png"
echo "stored: $out/kv-memory.json, $out/kv-memory.png"
