// kvbench run [EXPERIMENT.json] [--set key=value ...] [--out DIR] [--resume DIR] [--shard I/N]
//             [--history FILE]
// Runs an experiment into results/<name>-<timestamp>/ and renders its table,
// plots and report; an experiment of several models ("models") runs the grid
// on each in turn into the one folder. Everything is validated before the run folder is
// created, so a bad config leaves nothing behind; every finished cell is
// written atomically, so `--resume DIR` after Ctrl-C or kill -9 continues
// with nothing lost and nothing repeated.
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/history/add.h"
#include "harness/history/writer.h"
#include "harness/report/report.h"
#include "harness/run/plan.h"
#include "harness/run/run_meta.h"
#include "harness/run/runner.h"
#include "harness/run/sessions.h"
#include "model/common/error.h"
#include "model/common/input_file.h"
#include "model/common/printable.h"
#include "model/common/temporaries.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

// "I/N" with 1 <= I <= N <= 1000000, each a whole decimal number (no sign,
// no spaces, nothing after: "1/4294967297" must not read as 1/1).
std::pair<int, int> parse_shard(const std::string& s) {
  constexpr int64_t kMaxShards = 1000000;
  const auto slash = s.find('/');
  int64_t i = 0, n = 0;
  const auto whole = [](std::string_view t, int64_t& v) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && t[0] != '-' && r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  if (slash == std::string::npos || !whole(std::string_view(s).substr(0, slash), i) ||
      !whole(std::string_view(s).substr(slash + 1), n) || n < 1 || n > kMaxShards || i < 1 || i > n)
    throw InputError("--shard '" + escaped_text(s, 80) +
                     "': expected I/N with 1 <= I <= N <= 1000000 (e.g. 2/4)");
  return {static_cast<int>(i), static_cast<int>(n)};
}

}  // namespace

int cmd_run(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("experiment", po::value<std::string>(),
                     "experiment JSON (default: experiments/default.json)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field: --set decoding.chunk=256 (repeatable); --set "
      "'models=[\"a.gguf\",\"b.gguf\"]' runs the grid on each model into one run folder")(
      "out", po::value<std::string>(),
      "parent folder of the run folder (default: the config's \"output\")")(
      "resume", po::value<std::string>(), "continue an interrupted run folder")(
      "shard", po::value<std::string>(),
      "run slice I of N of the instances (merge the slices with kvbench merge)")(
      "no-share", po::bool_switch(),
      "prefill every cell from scratch (for checking that sharing changes nothing)")(
      "dry-run", po::bool_switch(), "print the grid and its prefill work, run nothing")(
      "quiet,q", po::bool_switch(), "no progress output")(
      "model", po::value<std::string>(),
      "run on this GGUF file instead of the experiment's model(s) (as --set model=PATH)")(
      "threads,t", po::value<int>(),
      "worker threads (as --set threads=N; default: the experiment's \"threads\"). Numbers are "
      "bit-identical for the same thread count")(
      "limit", po::value<int>(),
      "at most N instances per task entry, the first in grid order (a smoke test; recorded in "
      "the run's config)")(
      "history", po::value<std::string>(),
      "at the end, add the run's cells to this history database (kvbench history add)");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench run [EXPERIMENT.json] [--set key=value ...] [--model PATH] [--threads N] "
             "[--limit N] [--out DIR] [--resume DIR] [--shard I/N] [--history FILE]",
             &pos))
    return 0;
  RunOptions options;
  options.share_prefill = !vm["no-share"].as<bool>();
  options.quiet = vm["quiet"].as<bool>();
  if (vm.count("shard"))
    std::tie(options.shard, options.shard_count) = parse_shard(vm["shard"].as<std::string>());
  const std::vector<std::string> sets =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};

  ExperimentConfig config;
  std::unique_ptr<RunFolder> folder;
  std::string experiment_path;         // a new run's: for meta.json's "invocation"
  std::vector<std::string> overrides;  // --set, --limit, --threads, --model as key=value
  if (vm.count("resume")) {
    if (vm.count("experiment") || !sets.empty() || vm.count("out") || vm.count("shard") ||
        vm.count("model") || vm.count("limit") || vm.count("threads"))
      throw InputError(
          "--resume takes the run folder's own config and shard: give no experiment, --set, "
          "--model, --threads, --limit, --out or --shard");
    folder = std::make_unique<RunFolder>(
        RunFolder::open(vm["resume"].as<std::string>(), RunFolder::Access::Write));
    if (folder->packed())
      throw InputError(folder->dir() +
                       ": its cells are packed (cells.jsonl.zst, kvbench pack): a packed run is "
                       "finished and cannot be resumed");
    config = parse_experiment(folder->config(), folder->path("config.json"));
    // A shard resumes as the same slice (its meta.json says which), not as
    // the whole grid.
    const nlohmann::json old_meta = folder->meta();
    if (old_meta.contains("shard")) {
      const auto& s = old_meta["shard"];
      const int64_t index = s.value("index", int64_t{0}), count = s.value("count", int64_t{0});
      if (count < 1 || count > 1000000 || index < 1 || index > count)
        throw InputError(folder->path("meta.json") +
                         ": /shard: expected index and count with 1 <= index <= count");
      options.shard = static_cast<int>(index);
      options.shard_count = static_cast<int>(count);
    }
  } else {
    const std::string path =
        vm.count("experiment") ? vm["experiment"].as<std::string>() : "experiments/default.json";
    experiment_path = path;
    std::vector<std::string> all = sets;
    if (vm.count("limit")) {
      const int n = vm["limit"].as<int>();
      if (n < 1) throw InputError("--limit: expected a count >= 1, got " + std::to_string(n));
      all.push_back("limit=" + std::to_string(n));
    }
    if (vm.count("threads")) all.push_back("threads=" + std::to_string(thread_count(vm)));
    config = load_experiment(path, all);
    overrides = all;
    if (vm.count("out")) config.output = vm["out"].as<std::string>();
    // --model replaces the config's model, or all of its "models", by one
    // file (opened, and refused with one error line, when the plan is made).
    if (vm.count("model")) {
      const std::string m = vm["model"].as<std::string>();
      if (m.empty()) throw InputError("--model: expected a GGUF file's path");
      config.model = m;
      config.models = {ModelEntry{m, model_label_of_path(m)}};
      config.models_listed = false;
      overrides.push_back("model=" + m);
    }
  }

  // Validate everything that can be validated before writing anything.
  // The history is checked (what it is, its schema, its directory) before
  // the run, so a bad --history file fails now rather than after the run; it
  // is written only at the end (a writer's copy, history/writer.h).
  const bool several = config.models.size() > 1;
  const bool add_to_history = vm.count("history") && !vm["dry-run"].as<bool>();
  if (add_to_history) history::check_history_writable(vm["history"].as<std::string>());
  // Every model's grid is planned (its tokenizer makes its instances) before
  // anything is written; with several, each model is loaded again to run
  // (one at a time in memory), the only one is kept.
  std::vector<Plan> plans;
  std::unique_ptr<LlamaModel> only_model;
  for (size_t m = 0; m < config.models.size(); ++m) {
    auto model = LlamaModel::load(config.models[m].path);
    plans.push_back(make_plan(config, *model, m));
    if (several) continue;
    // A LongRoPE file whose longest sequence exceeds its original context
    // runs on its long factors (loaded again: a model is immutable).
    LlamaModel::reload_for_context(model, plans.back().longest_sequence);
    only_model = std::move(model);
  }
  const auto load = [&](const Plan& p) {
    auto model = only_model ? std::move(only_model)
                            : LlamaModel::load(p.model.path, true, p.longest_sequence);
    if (model->config().rope_long_active && !vm["quiet"].as<bool>())
      std::cerr << "note: " << escaped_text(p.model.label, 200)
                << ": LongRoPE's long factors: the longest sequence (" << p.longest_sequence
                << " tokens) exceeds the original context (" << model->config().n_ctx_orig
                << "), as llama.cpp runs with a context that holds it\n";
    return model;
  };
  int64_t instances = 0, cells = 0;
  for (const auto& p : plans) {
    instances += static_cast<int64_t>(p.instances.size());
    cells += p.cells();
  }
  const size_t n_policies = plans.front().policies.size();
  if (vm["dry-run"].as<bool>()) {
    RunSummary w;
    for (const auto& p : plans) {
      const auto model = load(p);
      const RunSummary one = plan_work(config, p, *model, options);
      w.cells_total += one.cells_total;
      w.prefill_tokens_computed += one.prefill_tokens_computed;
      w.prefill_tokens_naive += one.prefill_tokens_naive;
      // Every model's plan has the same policies.
      w.prefill_tokens_by_policy.resize(one.prefill_tokens_by_policy.size());
      w.prompt_tokens_by_policy.resize(one.prompt_tokens_by_policy.size());
      for (size_t i = 0; i < one.prefill_tokens_by_policy.size(); ++i) {
        w.prefill_tokens_by_policy[i] += one.prefill_tokens_by_policy[i];
        w.prompt_tokens_by_policy[i] += one.prompt_tokens_by_policy[i];
      }
    }
    std::cout << config.name << ": " << instances << " instances x " << n_policies
              << " policies = " << cells << " cells";
    if (options.shard_count > 1)
      std::cout << " (shard " << options.shard << "/" << options.shard_count << ": "
                << w.cells_total << ")";
    if (several) {
      std::cout << "\nmodels:";
      for (const auto& p : plans)
        std::cout << "\n  " << escaped_text(p.model.label, 200) << "  ["
                  << escaped_text(p.model.path, 200) << "]: " << p.instances.size()
                  << " instances, " << p.cells() << " cells";
    }
    // Where the prefill work goes: what each policy's cells prefill
    // themselves, as a share of their prompts (0%: every cell branches from
    // the shared prefill).
    std::cout << "\npolicies (prefill each computes itself, of its prompts):";
    const auto& policies = plans.front().policies;
    for (size_t i = 0; i < policies.size(); ++i) {
      const auto& p = policies[i];
      std::cout << "\n  " << p.label << "  [" << p.canonical << "]";
      if (i < w.prompt_tokens_by_policy.size() && w.prompt_tokens_by_policy[i] > 0)
        std::cout << "  "
                  << std::llround(100.0 * static_cast<double>(w.prefill_tokens_by_policy[i]) /
                                  static_cast<double>(w.prompt_tokens_by_policy[i]))
                  << "%";
    }
    std::cout << "\nprefill tokens: " << w.prefill_tokens_computed << " computed with sharing, "
              << w.prefill_tokens_naive << " naive (" << std::fixed << std::setprecision(1)
              << 100.0 * w.prefill_tokens_computed / std::max<int64_t>(1, w.prefill_tokens_naive)
              << "%)\n";
    return 0;
  }
  nlohmann::json meta = collect_run_meta(config.models, config.threads);
  const nlohmann::json session = new_session(meta);  // this invocation's machine and build
  // What each cell records: the files as they are now (a resumed run checks
  // they are the ones it started with).
  for (auto& p : plans) p.model.sha256 = model_sha256(meta, p.model.index);
  if (folder) {
    const nlohmann::json old = folder->meta();
    check_same_models(old, meta, folder->path("meta.json"));
    check_same_inputs(
        old,
        input_hashes(config, read_regular_file(folder->path("config.json"), kMaxConfigBytes,
                                               "a run folder's config.json")),
        folder->dir());
    meta = old;
  } else {
    meta["inputs"] = input_hashes(config, json_file_text(to_json(config)));
    // What the report says the run was: the experiment file and every change
    // made to it on the command line (its description is the file's own).
    meta["invocation"] = {{"experiment", experiment_path}, {"overrides", overrides}};
  }
  // This invocation, as a session of the run (harness/run/sessions.h): a new
  // folder is created with it; its time and cells are written after every
  // instance. A resumed folder's meta.json is not touched before the first
  // instance is done (a resume that fails on its input writes nothing).
  {
    nlohmann::json sessions = meta.value("sessions", nlohmann::json::array());
    if (sessions.size() >= kMaxSessions)
      throw InputError(folder->path("meta.json") + ": " + std::to_string(sessions.size()) +
                       " sessions already, the most a run folder records: start a new run");
    sessions.push_back(session);
    meta["sessions"] = sessions;
  }
  meta["plan"] = {{"instances", instances}, {"policies", n_policies}, {"cells", cells}};
  if (several) meta["plan"]["models"] = plans.size();
  if (options.shard_count > 1)
    meta["shard"] = {{"index", options.shard}, {"count", options.shard_count}};
  const bool created = !folder;
  if (!folder)
    folder = std::make_unique<RunFolder>(
        RunFolder::create(config.output, config.name, to_json(config), meta));
  set_interrupt_message(
      "\ninterrupted: finished cells are saved; continue with: kvbench run --resume " +
      escaped_text(folder->dir(), 2000) + "\n");
  std::cerr << "run folder: " << escaped_text(folder->dir(), 2000) << " (";
  if (several) std::cerr << plans.size() << " models, ";
  std::cerr << instances << " instances x " << n_policies << " policies";
  if (options.shard_count > 1)
    std::cerr << ", shard " << options.shard << "/" << options.shard_count;
  std::cerr << ")\n";

  const auto session_start = std::chrono::steady_clock::now();
  const auto note_session = [&](int64_t cells_run) {
    nlohmann::json& s = meta["sessions"].back();
    s["seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start).count();
    s["cells"] = cells_run;
  };

  RunSummary sum;
  try {
    for (const auto& p : plans) {
      if (several && !options.quiet)
        std::cerr << "model " << escaped_text(p.model.label, 200) << "\n";
      const auto model = load(p);
      RunOptions with_session = options;
      const int64_t before = sum.cells_run;
      with_session.after_instance = [&](int64_t run) {
        note_session(before + run);
        write_json_atomic(folder->path("meta.json"), meta);
      };
      const RunSummary one = run_cells(config, p, *model, *folder, with_session);
      sum.cells_total += one.cells_total;
      sum.cells_run += one.cells_run;
      sum.cells_skipped += one.cells_skipped;
      sum.prefill_tokens_computed += one.prefill_tokens_computed;
      sum.prefill_tokens_naive += one.prefill_tokens_naive;
      sum.prefills_loaded += one.prefills_loaded;
    }
  } catch (...) {
    // A run that fails before its first cell leaves no folder behind.
    if (created && folder->cells().empty()) folder->remove();
    throw;
  }
  // Work counters add up over resumed invocations.
  nlohmann::json work = meta.value("work", nlohmann::json::object());
  work["prefill_tokens_computed"] =
      work.value("prefill_tokens_computed", int64_t{0}) + sum.prefill_tokens_computed;
  work["prefill_tokens_naive"] =
      work.value("prefill_tokens_naive", int64_t{0}) + sum.prefill_tokens_naive;
  if (sum.prefills_loaded > 0)
    work["prefills_loaded"] = work.value("prefills_loaded", int64_t{0}) + sum.prefills_loaded;
  meta["work"] = work;
  note_session(sum.cells_run);
  write_json_atomic(folder->path("meta.json"), meta);

  const ReportSummary report = write_report(*folder);
  std::cout << terminal_table(report.tables, terminal_width()) << "\n"
            << report.cells << " of " << cells << " cells in " << escaped_text(folder->dir(), 2000)
            << " (this invocation ran " << sum.cells_run << ", " << sum.cells_skipped
            << " were already done)\n"
            << "prefill tokens computed: " << sum.prefill_tokens_computed << " of a naive "
            << sum.prefill_tokens_naive
            << (sum.prefills_loaded > 0
                    ? " (" + std::to_string(sum.prefills_loaded) + " kept prefill" +
                          (sum.prefills_loaded > 1 ? "s" : "") + " loaded from the run folder)"
                    : std::string())
            << "\nfull table: " << escaped_text(folder->path("table.md"), 2000)
            << "; report: " << escaped_text(folder->path("report.md"), 2000) << "\n";
  if (!report.plot_warning.empty()) std::cerr << "warning: " << report.plot_warning << "\n";
  if (add_to_history) {
    // The run folder is complete: its lock is released first, so a history
    // kept inside it can take its directory's writer lock.
    const std::string dir = folder->dir();
    folder.reset();
    history::HistoryWriter writer(vm["history"].as<std::string>());
    const history::AddResult h = history::add_run(writer.db(), dir, history::default_repo());
    writer.commit();
    std::cout << "history: " << h.cells_added << " cells added to "
              << escaped_text(vm["history"].as<std::string>(), 512) << " (" << h.cells_present
              << " already there)\n";
  }
  return 0;
}

}  // namespace kvbench::cli
