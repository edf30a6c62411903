// The Slurm job scripts of `kvbench submit`: a job array with one shard of an
// experiment per array task, and the optional merge job that runs after it.
// Paths in them come from users (the run area, the working directory, the
// kvbench binary's location), so every one is single-quoted for sh; nothing
// a user gives reaches an #SBATCH line, which sbatch parses with rules of its
// own (the job name is reduced to a safe alphabet first).
//
// A run area, <output>/<name>-slurm-<timestamp>/:
//   experiment.json   the resolved config every shard runs (a snapshot: edits to
//                     the experiment file after submitting change no shard)
//   shards.sh         the job array script; merge.sh the merge job's
//   logs/             Slurm's output: <task>.out, merge.out
//   shards/<task>/    each task's run folder (kvbench run --out)
//   job               the job array's id once submitted
//   merged/           the merged run folder (kvbench merge)
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvbench {

struct SlurmJob {
  std::string kvbench;  // absolute path of the kvbench binary
  std::string workdir;  // where relative paths of the config resolve (the submitting cwd)
  std::string area;     // the run area (absolute)
  std::string name;     // the experiment's name (for --job-name, made safe)
  int shards = 1;       // array tasks 1..shards
  int threads = 1;      // the config's threads: --cpus-per-task
};

// The job array script: each task runs `kvbench run AREA/experiment.json
// --shard I/N --out AREA/shards/I`, or resumes the run folder already there
// (a task Slurm requeued after a node failure continues its cells).
std::string shard_script(const SlurmJob& job);

// The merge job's script: `kvbench merge AREA/shards/*/* -o AREA/merged`.
std::string merge_script(const SlurmJob& job);

// The merge command for a person to run, quoted for sh.
std::string merge_command(const SlurmJob& job);

// The job id in `sbatch --parsable` output ("12345" or "12345;cluster", one
// line); nullopt when it is anything else.
std::optional<std::string> parse_sbatch_job_id(std::string_view output);

}  // namespace kvbench
