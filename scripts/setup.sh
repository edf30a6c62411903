#!/usr/bin/env bash
# Idempotent set-up on a Debian machine: installs the missing packages,
# fetches the default model, configures and builds. Safe to run again: each
# step does nothing when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build clang libclang-rt-14-dev clang-format pkg-config python3 python3-pip
  gnu-standards debian-reference-en wamerican
  libeigen3-dev libopenblas-dev libboost-program-options-dev libboost-iostreams-dev
  nlohmann-json3-dev libssl-dev libgtest-dev libbenchmark-dev libpcre2-dev gnuplot-nox libsqlite3-dev
  libfmt-dev  # aligned terminal tables
  libmd4c-dev libmd4c-html0-dev  # the hostile tests render Markdown as a viewer does
  slurm-wlm munge  # kvbench submit's integration check starts a private single-node Slurm
  chromium  # the report test renders report.html headless (scripts/check_report_browser.py)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

scripts/fetch_model.sh

if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fi
cmake --build build -j"$(nproc)"
