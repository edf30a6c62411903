#!/usr/bin/env bash
# The Slurm integration check (ctest: slurm_check, label `slurm`). Starts a
# single-node Slurm of its own on this machine (Debian's slurm-wlm and munge:
# munged, slurmctld and slurmd on 127.0.0.1, with a fresh munge key, free
# ports and every state, spool, log and socket file in one temporary folder,
# so nothing of the system's is touched and two checks can run at once),
# submits a tiny experiment as a 3-task job array with a dependent merge job
# (kvbench submit --merge), waits for it, and checks that the merged run
# folder's cells equal an unsharded `kvbench run` of the same experiment.
# Everything it started is stopped on exit, whatever the exit.
# Exit 0 passed, 1 failed, 77 skipped (Slurm or munge not installed;
# scripts/setup.sh installs them).
# Usage: scripts/slurm_check.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
kvbench=$build/kvbench
export PATH="$PATH:/usr/sbin:/sbin"
for prog in munged slurmctld slurmd sbatch sinfo squeue scancel setpriv python3; do
  if ! command -v "$prog" >/dev/null; then
    echo "skipped: $prog not found (scripts/setup.sh installs slurm-wlm and munge)"
    exit 77
  fi
done
started=$(date +%s)
# The whole check stays far inside ctest's timeout, so its own clean-up
# always runs (a test killed by ctest could not clean up).
deadline=$((started + 240))

# Kills every process whose environment holds SLURM_CONF=$1: the daemons,
# job steps and jobs of one check (its own cluster), and nothing else.
kill_marked() {
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    if { tr '\0' '\n' <"$environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$1"; then
      pid=${environ#/proc/}
      kill -9 "${pid%/environ}" 2>/dev/null
    fi
  done
}

# A check killed outright (kill -9) cannot clean up: its daemons die with it
# (below), but a job step of its cluster may outlive them. The next check
# ends those and removes the folder, once the check that owned it is gone.
for stale in /tmp/kvbench-slurm.*; do
  [ -f "$stale/owner" ] || continue
  owner=$(cat "$stale/owner" 2>/dev/null || true)
  if [[ "$owner" =~ ^[0-9]+$ ]] && ! kill -0 "$owner" 2>/dev/null; then
    kill_marked "$stale/slurm.conf"
    rm -rf "$stale"
  fi
done

work=$(mktemp -d /tmp/kvbench-slurm.XXXXXX)
echo $$ >"$work/owner"
# munged wants every folder above its socket searchable by all.
chmod 755 "$work"
mkdir -p "$work/key" "$work/run" "$work/log" "$work/state" "$work/spool" "$work/out"
chmod 700 "$work/key"
conf=$work/slurm.conf
pids=()

# Stops, in order: the jobs (so no slurmstepd outlives its slurmd), the
# daemons we started (by their pids), then anything still carrying this
# check's SLURM_CONF in its environment (a job step Slurm did not end).
cleanup() {
  local code=$?
  set +e
  trap - EXIT INT TERM
  if [ -f "$conf" ] && ((${#pids[@]})); then
    SLURM_CONF=$conf scancel --quiet --user="$(id -un)" 2>/dev/null
    for _ in $(seq 20); do
      [ -z "$(SLURM_CONF=$conf squeue -h 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  kill_marked "$conf"
  rm -rf "$work"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAILED: $*"
  for f in "$work"/log/*.log "$work"/out/*/logs/*.out; do
    [ -f "$f" ] || continue
    echo "--- ${f#"$work"/}"
    tail -n 20 "$f"
  done
  exit 1
}

# A daemon in the foreground, as our child: killed with us even when this
# script is killed outright (parent-death signal).
start() {
  local log=$1
  shift
  SLURM_CONF=$conf setpriv --pdeathsig KILL "$@" >>"$work/log/$log" 2>&1 &
  pids+=($!)
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# munge, with a key of its own and its socket in the temporary folder.
head -c 1024 /dev/urandom >"$work/key/munge.key"
chmod 400 "$work/key/munge.key"
start munged.log munged --foreground --key-file="$work/key/munge.key" \
  --socket="$work/run/munge.sock" --pid-file="$work/run/munged.pid" \
  --seed-file="$work/key/munged.seed" --log-file="$work/log/munged.log"
for _ in $(seq 50); do [ -S "$work/run/munge.sock" ] && break; sleep 0.1; done
[ -S "$work/run/munge.sock" ] || fail "munged did not start"

host=$(hostname -s)
node=kvbnode$$
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
cat >"$conf" <<EOF
# A single-node cluster for scripts/slurm_check.sh (no cgroups, no accounting).
ClusterName=kvbench$$
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/run/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
start slurmctld.out slurmctld -D -i -f "$conf"
start slurmd.out slurmd -D -N "$node" -f "$conf"
state=
for _ in $(seq 100); do
  state=$(SLURM_CONF=$conf sinfo -h -n "$node" -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || fail "the node is '$state', not idle, after 20 s"
echo "slurm: node $node idle after $(($(date +%s) - started)) s"

# A tiny experiment: 3 passkey instances (one per shard) x 3 policies.
"$kvbench" tiny-model -o "$work/tiny.gguf" >/dev/null
cat >"$work/tiny.json" <<EOF
{"name": "tiny", "model": "$work/tiny.gguf", "threads": 1, "seed": 3,
 "tasks": [{"task": "passkey", "lengths": [300], "depths": [0.2, 0.5, 0.8]}],
 "policies": ["full", {"spec": "window", "budgets": [96]}, "snapkv:budget=96"],
 "decoding": {"chunk": 64, "max_new_tokens": 4}}
EOF
cd "$work"
SLURM_CONF=$conf "$kvbench" submit tiny.json --shards 3 --merge --sbatch --time=00:05:00 \
  --out "$work/out" | tee "$work/submit.txt" || fail "kvbench submit failed"
area=$(echo "$work"/out/tiny-slurm-*)
[ -d "$area" ] || fail "no run area in $work/out"
array_job=$(cat "$area/job")
merge_job=$(sed -n 's/^merge job \([0-9]*\) writes.*/\1/p' "$work/submit.txt")
[ -n "$merge_job" ] || fail "no merge job id in kvbench submit's output"

# The unsharded reference, while Slurm runs the shards.
"$kvbench" run tiny.json -q --out "$work/whole" >/dev/null 2>"$work/log/whole.log" &
whole_pid=$!

while [ -n "$(SLURM_CONF=$conf squeue -h -j "$array_job,$merge_job" 2>/dev/null)" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "jobs $array_job and $merge_job still queued at the deadline"
  sleep 1
done
wait "$whole_pid" || fail "the unsharded run failed"
[ -d "$area/merged" ] || fail "the merge job wrote no $area/merged"
for task in 1 2 3; do
  [ -f "$area/logs/$task.out" ] || fail "no Slurm log of task $task"
done

python3 - "$area/merged" "$work"/whole/tiny-* <<'EOF' || fail "merged cells differ from the unsharded run's"
import json, pathlib, sys
def cells(folder):
    out = {}
    for f in sorted(pathlib.Path(folder, "cells").glob("*.json")):
        c = json.loads(f.read_text())
        c.pop("timing", None)  # wall-clock figures vary between runs
        c.pop("work", None)    # how a cell was started (shared prefill or not)
        out[c["id"]] = c
    return out
merged, whole = cells(sys.argv[1]), cells(sys.argv[2])
if len(whole) != 9 or merged != whole:
    sys.exit(f"merged {len(merged)} cells, unsharded {len(whole)}: "
             f"differing ids {sorted(k for k in set(merged) | set(whole) if merged.get(k) != whole.get(k))}")
print(f"merged == unsharded: {len(merged)} cells")
EOF
echo "slurm check passed in $(($(date +%s) - started)) s"
