#!/bin/bash
# The leaderboard (experiments/leaderboard.json: the 13 RULER tasks at 4k;
# EXPERIMENT=experiments/leaderboard-needles.json: niah and passkey at 4k and
# 8k) on both models and both protocols, resumably: each model x protocol runs as SHARDS processes of one
# thread each (two 1-thread shards use 2 cores better than one 2-thread run:
# no barrier between them), then `kvbench merge` joins its shards.
#
# usage: scripts/leaderboard.sh OUT [SHARDS]     (default SHARDS: the core count)
#        EXPERIMENT=experiments/quick.json LIMIT=1 scripts/leaderboard.sh OUT   (a smoke test)
#        JOBS=smollm2-query_aware scripts/leaderboard.sh OUT 8    (one job, 8 shards)
#
# At most PARALLEL shards (default: the core count) run at once; more shards
# than cores make smaller pieces of work, so an interruption loses less (a
# finished shard is DONE and can be kept, e.g. packed with
# scripts/store_run.sh, and merged later). JOBS (space-separated
# <model>-<protocol>) picks the jobs; default all four.
#
# Run it again after an interruption: a finished job is skipped (its DONE
# file), an unfinished shard resumes its run folder (`kvbench run --resume`).
# STORE=1 stores each shard as it finishes (scripts/store_run.sh) under
# STORE_DIR/<job>/shards/shardI-of-N, to be committed; a shard stored there
# is skipped by later runs on any machine, and the merge reads it, so a job
# advances across sessions whose run folders do not survive. The stored
# tables come from the job's binary (KVBENCH): when the tree's report has
# changed since, `scripts/check_stored_results.py . build --update FOLDER`
# regenerates them from the cells before they are committed. STORE_DIR
# defaults to results/leaderboard (results/leaderboard-needles for the needle
# grid) only for the real grids (those two EXPERIMENTs, no LIMIT): a smoke
# test neither reads nor writes the committed shards unless it names its own
# STORE_DIR. Give each EXPERIMENT its own OUT: job folders are named by model
# and protocol only.
# Every job runs with threads=1, so all its cells have one thread count
# (numbers are bit-identical for a thread count, not across them).
# Results: OUT/<model>-<protocol>/merged, a run folder `kvbench report` reads;
# a job whose merged cells are stored (STORE_DIR/<job>/cells.jsonl.zst, by
# scripts/store_run.sh) is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
# One job's shards may run on different machines (sessions, a Slurm array):
# OpenBLAS's kernels are pinned so that their numbers agree
# (scripts/baseline_common.sh says why).
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
out=${1:?usage: scripts/leaderboard.sh OUT [SHARDS]}
shards=${2:-$(nproc)}
parallel=${PARALLEL:-$(nproc)}
jobs=${JOBS:-smollm2-query_agnostic smollm2-query_aware gemma3-query_agnostic gemma3-query_aware}
kvbench=${KVBENCH:-build/kvbench}
experiment=${EXPERIMENT:-experiments/leaderboard.json}
limit=(${LIMIT:+--limit "$LIMIT"})
declare -A model=(
  [smollm2]=models/SmolLM2-135M-Instruct.Q4_1.gguf
  [gemma3]=models/gemma-3-270m-q4_k_m.gguf
)

store_dir=${STORE_DIR:-}
if [ -z "$store_dir" ] && [ -z "${LIMIT:-}" ]; then
  case $experiment in
    experiments/leaderboard.json) store_dir=results/leaderboard ;;
    experiments/leaderboard-needles.json) store_dir=results/leaderboard-needles ;;
  esac
fi
[ -z "${STORE:-}" ] || [ -n "$store_dir" ] ||
  { echo "error: STORE=1 with another EXPERIMENT or a LIMIT needs its own STORE_DIR" >&2; exit 2; }

stored_shard() {  # job-name index -> the committed shard's folder ("" without a store)
  [ -n "$store_dir" ] && echo "$store_dir/$1/shards/shard$2-of-$shards"
  return 0
}

run_shard() {  # job-dir model protocol index
  local dir=$1/shard$4
  local stored
  stored=$(stored_shard "$(basename "$1")" "$4")
  [ -n "$stored" ] && [ -f "$stored/cells.jsonl.zst" ] && return 0
  mkdir -p "$dir"
  [ -f "$dir/DONE" ] && return 0
  local folder
  folder=$(find "$dir" -mindepth 1 -maxdepth 1 -type d | head -1)
  if [ -n "$folder" ]; then
    "$kvbench" run --resume "$folder" -q
  else
    "$kvbench" run "$experiment" "${limit[@]}" --model "$2" --threads 1 \
      --set "decoding.protocol=$3" --shard "$4/$shards" --out "$dir" -q
  fi
  touch "$dir/DONE"
  if [ -n "${STORE:-}" ]; then
    folder=$(find "$dir" -mindepth 1 -maxdepth 1 -type d | head -1)
    KVBENCH_BIN=$kvbench scripts/store_run.sh "$folder" "$stored"
  fi
}

for name in $jobs; do
  m=${name%%-*}
  p=${name#*-}
  [ -n "${model[$m]:-}" ] && [[ $p == query_agnostic || $p == query_aware ]] ||
    { echo "error: JOBS: '$name' is not <smollm2|gemma3>-<query_agnostic|query_aware>" >&2; exit 2; }
  job=$out/$name
  [ -d "$job/merged" ] && continue
  # A job merged and stored on any machine (its packed cells in STORE_DIR/<job>).
  if [ -n "$store_dir" ] && [ -f "$store_dir/$name/cells.jsonl.zst" ]; then
    echo "$name: already stored in $store_dir/$name"
    continue
  fi
  mkdir -p "$job"
  echo "$(date -u +%FT%TZ) $m $p: $shards shards, $parallel at a time"
  # A queue of shard indices, $parallel workers taking the next one.
  failed=0
  for i in $(seq 1 "$shards"); do
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || failed=1; done
    run_shard "$job" "${model[$m]}" "$p" "$i" > "$job.shard$i.log" 2>&1 &
  done
  while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
  [ "$failed" = 0 ] || { echo "error: $name: a shard failed (see $job.shard*.log)" >&2; exit 1; }
  # Each shard's run folder, or its stored copy.
  folders=()
  for i in $(seq 1 "$shards"); do
    stored=$(stored_shard "$name" "$i")
    if [ -n "$stored" ] && [ -f "$stored/cells.jsonl.zst" ]; then
      folders+=("$stored")
    else
      folders+=("$(find "$job/shard$i" -mindepth 1 -maxdepth 1 -type d | head -1)")
    fi
  done
  "$kvbench" merge "${folders[@]}" -o "$job/merged" > "$job.merge.log"
  echo "$(date -u +%FT%TZ) $m $p: merged into $job/merged"
done
