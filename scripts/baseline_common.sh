# Sourced by the gate's scripts (check_baseline.sh, check_gate_power.sh)
# with BUILD_DIR as $1: sets root, build and model, skips with 77 (ctest's
# "skipped") when the default model is missing, makes $out (removed at
# exit) and enters the repository.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
model=${KVBENCH_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ ! -f "$model" ]; then
  echo "skipped: $model not found (run scripts/setup.sh)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$root"
