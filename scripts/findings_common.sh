# Sourced by the scripts/findings_*.sh: the repository root, the built
# kvbench and the default model, each checked (one error line, exit 2), and
# the output folder $out (the first argument, else results/findings/$1 of
# the caller's name) created.
#   . "$(dirname "$0")/findings_common.sh" NAME "${1:-}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# KVBENCH_BIN: a copy of build/kvbench, so a rebuild cannot swap the binary mid-run.
kvbench=${KVBENCH_BIN:-$here/build/kvbench}
model=${KVBENCH_MODEL:-$here/models/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -x "$kvbench" ] || { echo "error: $kvbench: not built (run scripts/setup.sh)" >&2; exit 2; }
[ -f "$model" ] || { echo "error: $model: no such model file (run scripts/setup.sh)" >&2; exit 2; }
out=${2:-$here/results/findings/$1}
mkdir -p "$out"
