#!/usr/bin/env bash
# The main job: set up (idempotent), then run the default demo on the default
# model. Extra arguments go to `kvbench generate`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/kvbench generate --chat --prompt "What is the capital of France?" --max-tokens 64 "$@"
