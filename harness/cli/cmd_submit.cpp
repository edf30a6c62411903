// kvbench submit EXPERIMENT.json --shards N [--sbatch ARG ...] [--set key=value ...]
//                [--out DIR] [--merge] [--dry-run]
// Runs an experiment on a Slurm cluster: writes a run area (the resolved
// config, a job array script with one shard per task) and hands the script
// to sbatch, which is started without a shell (its arguments, --sbatch ones
// included, passed as they are). Everything is validated before the run
// area is created, and a failed submission removes it again.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/run/plan.h"
#include "harness/run/run_folder.h"
#include "harness/run/slurm_job.h"
#include "harness/subprocess.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/printable.h"
#include "model/llama_model.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace kvbench::cli {
namespace {

// sbatch's own complaint, as one bounded line.
std::string first_lines(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size() && out.size() < 400) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      out += (out.empty() ? "" : " / ") + line;
    start = end + 1;
  }
  return out.empty() ? "(no message)" : out;
}

// Runs sbatch in the run area (the scripts' logs/ is relative to it) and
// returns the job id. *queued: whether sbatch accepted the job (then a
// failure to read its id must keep the run area).
std::string sbatch(std::vector<std::string> argv, const std::string& area, bool* queued) {
  const Captured r = run_capture(argv, area);
  *queued = false;
  if (r.spawn_error == ENOENT)
    throw InputError(
        "sbatch: not found on PATH (kvbench submit needs Slurm; --dry-run prints "
        "the job script)");
  if (r.spawn_error != 0)
    throw InputError("sbatch: cannot be started (" + std::string(std::strerror(r.spawn_error)) +
                     ")");
  if (r.code != 0)
    throw InputError("sbatch failed (exit " + std::to_string(r.code) + "): " + first_lines(r.err));
  *queued = true;
  const auto id = parse_sbatch_job_id(r.out);
  if (!id)
    throw InputError("sbatch printed '" + escaped_text(r.out, 200) +
                     "', not a job id (sbatch --parsable: digits[;cluster]); the job may be "
                     "queued (squeue), its run area is " +
                     area);
  return *id;
}

}  // namespace

int cmd_submit(const Args& given) {
  // "--sbatch --time=1:00:00" would read the value as an option of ours:
  // glue each --sbatch to the word after it.
  Args args;
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i] == "--sbatch" && i + 1 < given.size())
      args.push_back("--sbatch=" + given[++i]);
    else
      args.push_back(given[i]);
  }
  po::options_description desc("options");
  desc.add_options()("experiment", po::value<std::string>()->required(), "experiment JSON")(
      "shards", po::value<int>()->required(), "number of array tasks, one shard each")(
      "sbatch", po::value<std::vector<std::string>>()->composing(),
      "an argument for sbatch, e.g. --sbatch --partition=cpu --sbatch --time=02:00:00 "
      "(repeatable; passed as is)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field: --set decoding.chunk=256 (repeatable); --set threads=N also sets "
      "--cpus-per-task")("out", po::value<std::string>(),
                         "parent folder of the run area (default: the config's \"output\")")(
      "merge", po::bool_switch(), "also submit a job that merges the shards when all succeed")(
      "dry-run", po::bool_switch(), "print the job script, write and submit nothing");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench submit EXPERIMENT.json --shards N [--sbatch ARG ...] [--set key=value ...] "
             "[--out DIR] [--merge] [--dry-run]",
             &pos))
    return 0;
  const int shards = vm["shards"].as<int>();
  if (shards < 1) throw InputError("--shards " + std::to_string(shards) + ": must be at least 1");
  const auto list = [&](const char* key) {
    return vm.count(key) ? vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  const std::string path = vm["experiment"].as<std::string>();
  ExperimentConfig config = load_experiment(path, list("set"));
  if (vm.count("out")) {
    // The shards read the config back from the run area: check it as they will.
    config.output = vm["out"].as<std::string>();
    config = parse_experiment(to_json(config), path + " (with --out)");
  }

  // Validate what a shard would, before writing anything: the model loads
  // and the grid plans; a shard runs whole instances, so more shards than
  // instances would queue tasks with nothing to do.
  // With several models a shard takes the same slice of each model's instances.
  size_t instances = 0;
  for (size_t m = 0; m < config.models.size(); ++m) {
    const auto model = LlamaModel::load(config.models[m].path);
    instances = std::max(instances, make_plan(config, *model, m).instances.size());
  }
  if (static_cast<size_t>(shards) > instances)
    throw InputError("--shards " + std::to_string(shards) + ": " + path + " has " +
                     std::to_string(instances) + " instances" +
                     (config.models.size() > 1 ? " (per model)" : "") +
                     ", and a shard runs whole instances");

  SlurmJob job;
  job.kvbench = fs::read_symlink("/proc/self/exe").string();
  job.workdir = fs::current_path().string();
  job.name = config.name;
  job.shards = shards;
  job.threads = config.threads;
  const std::string output = fs::absolute(config.output).lexically_normal().string();
  const bool merge = vm["merge"].as<bool>();
  if (vm["dry-run"].as<bool>()) {
    job.area = output + "/" + config.name + "-slurm-" + utc_stamp();
    std::cout << shard_script(job);
    if (merge)
      std::cout << "\n# merge.sh, submitted to run after the array:\n" << merge_script(job);
    return 0;
  }

  job.area = create_stamped_folder(output, config.name + "-slurm");
  bool queued = false;
  std::string id, merge_id;
  try {
    fs::create_directory(job.area + "/logs");
    fs::create_directory(job.area + "/shards");
    write_json_atomic(job.area + "/experiment.json", to_json(config));
    write_file_atomic(job.area + "/shards.sh", shard_script(job));
    if (merge) write_file_atomic(job.area + "/merge.sh", merge_script(job));
    std::vector<std::string> argv = {"sbatch", "--parsable"};
    for (const auto& a : list("sbatch")) argv.push_back(a);
    argv.push_back(job.area + "/shards.sh");
    id = sbatch(argv, job.area, &queued);
    write_file_atomic(job.area + "/job", id + "\n");
  } catch (...) {
    std::error_code ec;
    if (!queued) fs::remove_all(job.area, ec);
    throw;
  }
  if (merge) {
    std::vector<std::string> argv = {"sbatch", "--parsable", "--dependency=afterok:" + id,
                                     "--kill-on-invalid-dep=yes"};
    for (const auto& a : list("sbatch")) argv.push_back(a);
    argv.push_back(job.area + "/merge.sh");
    try {
      merge_id = sbatch(argv, job.area, &queued);
    } catch (const InputError& e) {
      throw InputError(std::string(e.what()) + " (the job array " + id +
                       " is queued; merge its shards by hand: " + merge_command(job) + ")");
    }
  }
  const std::string shown_area = escaped_text(job.area, 4096, false);
  std::cout << "submitted job array " << id << ": " << shards << " shard" << (shards > 1 ? "s" : "")
            << " of " << escaped_text(config.name, 200) << "\n"
            << "run area: " << shown_area << " (logs/<task>.out, shards/<task>/)\n";
  if (merge)
    std::cout << "merge job " << merge_id << " writes " << shown_area
              << "/merged when every task has succeeded\n";
  else
    std::cout << "when every task has finished, merge the shards with:\n  "
              << escaped_text(merge_command(job), 8192, false) << "\n";
  return 0;
}

}  // namespace kvbench::cli
