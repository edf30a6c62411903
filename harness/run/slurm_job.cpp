#include "harness/run/slurm_job.h"

#include <cctype>
#include <sstream>

#include "harness/encode/shell.h"

namespace kvbench {
namespace {

// sbatch reads #SBATCH lines with its own tokenizer (quotes, '#' comments):
// the job name keeps only characters that mean nothing to it or to sh.
std::string job_name(std::string_view name) {
  std::string out;
  for (const char c : name)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return out.empty() ? "kvbench" : out;
}

}  // namespace

std::string shard_script(const SlurmJob& job) {
  std::ostringstream s;
  s << "#!/bin/sh\n"
    << "# kvbench submit: one shard of experiment " << job_name(job.name) << " per array task.\n"
    << "# sbatch ran in the run area, so logs/ below is the run area's.\n"
    << "#SBATCH --job-name=" << job_name(job.name) << "\n"
    << "#SBATCH --array=1-" << job.shards << "\n"
    << "#SBATCH --cpus-per-task=" << job.threads << "\n"
    << "#SBATCH --output=logs/%a.out\n"
    << "set -eu\n"
    << "kvbench=" << shell_quote(job.kvbench) << "\n"
    << "area=" << shell_quote(job.area) << "\n"
    << "task=${SLURM_ARRAY_TASK_ID:?not started as a Slurm array task}\n"
    << "out=\"$area/shards/$task\"\n"
    << "# Relative paths in the experiment (model, instances) resolve as they did\n"
    << "# where kvbench submit ran.\n"
    << "cd " << shell_quote(job.workdir) << "\n"
    << "# A task Slurm requeued (a node failed) resumes its run folder.\n"
    << "for folder in \"$out\"/*; do\n"
    << "  if [ -f \"$folder/config.json\" ]; then\n"
    << "    exec \"$kvbench\" run --resume \"$folder\"\n"
    << "  fi\n"
    << "done\n"
    << "exec \"$kvbench\" run \"$area/experiment.json\" --shard \"$task/" << job.shards
    << "\" --out \"$out\"\n";
  return s.str();
}

std::string merge_script(const SlurmJob& job) {
  std::ostringstream s;
  s << "#!/bin/sh\n"
    << "# kvbench submit --merge: merges the shards once every array task succeeded.\n"
    << "#SBATCH --job-name=" << job_name(job.name) << "-merge\n"
    << "#SBATCH --output=logs/merge.out\n"
    << "set -eu\n"
    << "kvbench=" << shell_quote(job.kvbench) << "\n"
    << "area=" << shell_quote(job.area) << "\n"
    << "exec \"$kvbench\" merge \"$area\"/shards/*/* -o \"$area/merged\"\n";
  return s.str();
}

std::string merge_command(const SlurmJob& job) {
  return shell_quote(job.kvbench) + " merge " + shell_quote(job.area) + "/shards/*/* -o " +
         shell_quote(job.area + "/merged");
}

std::optional<std::string> parse_sbatch_job_id(std::string_view output) {
  if (!output.empty() && output.back() == '\n') output.remove_suffix(1);
  const size_t semi = output.find(';');
  const std::string_view id = output.substr(0, semi);
  if (id.empty() || id.size() > 18) return std::nullopt;
  for (const char c : id)
    if (c < '0' || c > '9') return std::nullopt;
  if (semi != std::string_view::npos) {
    const std::string_view cluster = output.substr(semi + 1);
    if (cluster.empty() || cluster.size() > 64) return std::nullopt;
    for (const char c : cluster)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
        return std::nullopt;
  }
  return std::string(id);
}

}  // namespace kvbench
