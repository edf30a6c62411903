#!/usr/bin/env bash
# The test command: set up (idempotent), build, run every test with ctest.
# Tests that compare against the real model use models/ (fetched by set-up).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
