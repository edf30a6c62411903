// kvbench merge DIR... -o DIR: combines the shards of one experiment (run
// with --shard I/N, e.g. as a Slurm job array) into one run folder and
// renders its report. The shards must come from the same resolved config; a
// cell present in two shards must be identical apart from timing fields; and
// when every folder is a shard, all N shards of the split must be there (a
// failed array task must not turn into a merged run that lacks its cells).
//
// Runs of the same experiment on different models (configs equal but for
// "model") merge into one run of several models, as if run with
// --set models=[...]: each model's folders are shards as above, its cells
// get the model's key in their ids, and meta.json keeps each model's CPU and
// commit (the runs may come from different machines and builds), so the
// report draws the models as rows of one figure. Shards that ran on several
// machines or builds are listed with theirs ("machines", harness/run/machines.h).
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "harness/cli/cli.h"
#include "harness/report/report.h"
#include "harness/run/file_names.h"
#include "harness/run/machines.h"
#include "harness/run/run_folder.h"
#include "harness/run/sessions.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

// Each shard's meta.json says which slice it ran (--shard I/N): one split,
// no slice twice, and none missing when only shards are merged.
void check_split(const std::vector<RunFolder>& folders) {
  int count = 0;
  size_t sharded = 0;
  std::map<int, std::string> seen;
  for (const auto& f : folders) {
    const nlohmann::json meta = f.meta();
    if (!meta.contains("shard")) continue;
    const std::string file = f.path("meta.json");
    const auto& s = meta["shard"];
    const auto field = [&](const char* key) {
      if (!s.is_object() || !s.contains(key) || !s[key].is_number_integer() || s[key] < 1 ||
          s[key] > 1000000)
        throw InputError(file + ": /shard/" + key + ": expected an integer from 1 to 1000000");
      return s[key].get<int>();
    };
    const int index = field("index"), n = field("count");
    if (index > n)
      throw InputError(file + ": /shard: index " + std::to_string(index) + " > count " +
                       std::to_string(n));
    if (count != 0 && n != count)
      throw InputError(f.dir() + ": shard " + std::to_string(index) + " of " + std::to_string(n) +
                       ", but " + seen.begin()->second + " is one of " + std::to_string(count));
    count = n;
    ++sharded;
    const auto [it, fresh] = seen.emplace(index, f.dir());
    if (!fresh)
      throw InputError(f.dir() + ": shard " + std::to_string(index) + " of " + std::to_string(n) +
                       " again (also " + it->second + ")");
  }
  if (sharded == folders.size() && sharded > 0 && seen.size() != static_cast<size_t>(count)) {
    std::string missing;
    for (int i = 1; i <= count && missing.size() < 200; ++i)
      if (!seen.count(i)) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    throw InputError("shard" + std::string(count - seen.size() > 1 ? "s " : " ") + missing +
                     " of " + std::to_string(count) +
                     " missing: merge needs every shard of the split (rerun the missing ones)");
  }
}

std::vector<nlohmann::json> metas_of(const std::vector<RunFolder>& folders) {
  std::vector<nlohmann::json> out;
  for (const auto& f : folders) out.push_back(f.meta());
  return out;
}

// `machines` without the fields `common` holds (said once, beside the list).
nlohmann::json without_common(nlohmann::json machines, const nlohmann::json& common) {
  for (auto& e : machines)
    for (const auto& [k, v] : common.items()) e.erase(k);
  return machines;
}

// The CPU, commit and dirty flag that every one of `metas` has alike.
nlohmann::json common_machine(const std::vector<nlohmann::json>& metas) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* k : {"cpu", "git_commit", "git_dirty"}) {
    bool same = !metas.empty();
    for (const auto& m : metas) same = same && m.contains(k) && m[k] == metas.front()[k];
    if (same) out[k] = metas.front()[k];
  }
  return out;
}

}  // namespace

int cmd_merge(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("dirs", po::value<std::vector<std::string>>()->required()->multitoken(),
                     "run folders: shards of one experiment, or its runs on different models")(
      "output,o", po::value<std::string>()->required(), "merged run folder (must not exist)");
  po::positional_options_description pos;
  pos.add("dirs", -1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench merge DIR... -o DIR", &pos)) return 0;
  const auto dirs = vm["dirs"].as<std::vector<std::string>>();
  const std::string out = vm["output"].as<std::string>();
  check_run_folder_path(out);
  if (std::filesystem::exists(out))
    throw InputError(out + ": already exists (merge writes a new folder)");

  // Validate everything before writing anything.
  std::vector<RunFolder> folders;
  for (const auto& d : dirs) folders.push_back(RunFolder::open(d));
  // Where each shard was written (--out) is no part of the experiment; the
  // model is the part that may differ between merged runs.
  auto experiment_of = [](nlohmann::json c) {
    c.erase("output");
    c.erase("model");
    return c;
  };
  // The folders by model, in order of first appearance. A folder of several
  // models merges only with its own shards.
  std::vector<std::string> model_order;
  std::map<std::string, std::vector<size_t>> by_model;
  for (size_t i = 0; i < folders.size(); ++i) {
    const nlohmann::json& c = folders[i].config();
    const std::string key = c.contains("models") ? c["models"].dump() : c.value("model", "");
    if (!by_model.count(key)) model_order.push_back(key);
    by_model[key].push_back(i);
  }
  const bool across_models = model_order.size() > 1;
  const auto& config = folders.front().config();
  for (const auto& f : folders) {
    if (across_models && f.config().contains("models"))
      throw InputError(f.dir() +
                       ": holds several models; merge runs of several models only with their own "
                       "shards (runs of one model each merge across models)");
    if (experiment_of(f.config()) != experiment_of(config))
      throw InputError(f.dir() + ": its config.json differs from " + folders.front().dir() +
                       "'s (shards must come from the same experiment and overrides)");
  }
  // Each folder's meta.json, read and checked once.
  const std::vector<nlohmann::json> metas = metas_of(folders);
  std::map<std::string, nlohmann::json> cells;
  nlohmann::json models = nlohmann::json::array(), meta_models = nlohmann::json::array();
  std::set<std::string> keys;
  int64_t planned = 0;  // every model's planned cells (across models)
  for (const std::string& model : model_order) {
    std::vector<RunFolder> shards;
    std::vector<nlohmann::json> shard_metas;
    for (size_t i : by_model[model]) {
      shards.push_back(folders[i]);
      shard_metas.push_back(metas[i]);
    }
    check_split(shards);
    // One model's label, from its cells (a one-model run names it there).
    std::string label, key;
    for (const auto& s : shards)
      for (auto& c : s.cells()) {
        std::string id = c["id"].get<std::string>();
        if (across_models) {
          const std::string l = c.contains("model") && c["model"].is_object()
                                    ? c["model"].value("label", "")
                                    : std::string();
          if (l.empty())
            throw InputError(s.dir() + ": cell " + escaped_text(id, 200) +
                             " names no model label (runs of kvbench before model labels "
                             "cannot be merged across models)");
          if (label.empty()) {
            label = l;
            key = model_file_key(label);
            if (!keys.insert(key).second)
              throw InputError(s.dir() + ": model '" + escaped_text(label, 200) +
                               "' has the same file key as another merged model's");
          } else if (l != label) {
            throw InputError(s.dir() + ": cell " + escaped_text(id, 200) + " is of model '" +
                             escaped_text(l, 200) + "', its folder's others of '" +
                             escaped_text(label, 200) + "'");
          }
          id = key + "--" + id;
          c["id"] = id;
        }
        auto [it, fresh] = cells.emplace(id, c);
        if (fresh) continue;
        nlohmann::json a = it->second, b = c;
        a.erase("timing");
        b.erase("timing");
        if (a != b)
          throw InputError(s.dir() + ": cell " + escaped_text(id, 200) +
                           " differs from the same cell in another shard");
      }
    if (!across_models) continue;
    if (label.empty()) throw InputError(shards.front().dir() + ": holds no cells");
    const nlohmann::json& m = shard_metas.front();
    models.push_back({{"path", model}, {"label", label}});
    nlohmann::json entry = {
        {"path", model}, {"label", label}, {"sha256", m.value("model_sha256", "")}};
    // The model's machine and build, or its shards' several (harness/run/machines.h).
    const nlohmann::json common = common_machine(shard_metas);
    entry.update(common);
    if (const nlohmann::json machines = without_common(machines_of(shard_metas), common);
        machines.size() > 1) {
      check_machines(machines, out + "/meta.json",
                     "/models/" + std::to_string(models.size() - 1) + "/machines");
      entry["machines"] = machines;
    }
    meta_models.push_back(entry);
    if (m.contains("plan") && m["plan"].is_object())
      planned += m["plan"].value("cells", int64_t{0});
  }
  nlohmann::json merged_config = config;
  nlohmann::json meta = metas.front();
  meta["merged_from"] = dirs;
  meta.erase("shard");
  // The machine and build stay on top only where every folder's agree: the
  // shards of one job may have run on several machines or builds, listed
  // apart (a run of several models lists them per model).
  for (const char* k : {"cpu", "git_commit", "git_dirty", "machines"}) meta.erase(k);
  const nlohmann::json common = common_machine(metas);
  meta.update(common);
  if (!across_models)
    if (const nlohmann::json machines = without_common(machines_of(metas), common);
        machines.size() > 1) {
      check_machines(machines, out + "/meta.json", "/machines");  // what its reader accepts
      meta["machines"] = machines;
    }
  // Timings withheld in any folder (kvbench report --withhold-speed) stay
  // withheld: the merged cells include them.
  if (!meta.contains("speed_withheld"))
    for (const auto& m : metas)
      if (m.contains("speed_withheld")) {
        meta["speed_withheld"] = m["speed_withheld"];
        break;
      }
  if (across_models) {
    merged_config.erase("model");
    merged_config["models"] = models;
    meta.erase("model");
    meta.erase("model_sha256");
    meta["models"] = meta_models;
    // The report's "as run" line: the models are listed apart, not as the
    // first run's --model.
    if (meta.contains("invocation") && meta["invocation"].contains("overrides")) {
      nlohmann::json kept = nlohmann::json::array();
      for (const auto& o : meta["invocation"]["overrides"])
        if (o.get<std::string>().rfind("model=", 0) != 0) kept.push_back(o);
      meta["invocation"]["overrides"] = kept;
    }
    // The plan of a run of several models: every model's cells.
    if (meta.contains("plan") && meta["plan"].is_object()) {
      meta["plan"]["cells"] = planned;
      meta["plan"]["models"] = model_order.size();
    }
  }
  // Work counters add up over the shards.
  int64_t computed = 0, naive = 0;
  for (const auto& m : metas) {
    if (m.contains("work")) {
      computed += m["work"].value("prefill_tokens_computed", int64_t{0});
      naive += m["work"].value("prefill_tokens_naive", int64_t{0});
    }
  }
  meta["work"] = {{"prefill_tokens_computed", computed}, {"prefill_tokens_naive", naive}};
  // Every folder's sessions, each with the shard it ran (harness/run/sessions.h).
  nlohmann::json sessions = nlohmann::json::array();
  for (const auto& m : metas) {
    if (!m.contains("sessions")) continue;
    for (nlohmann::json one : m["sessions"]) {
      if (m.contains("shard") && m["shard"].is_object() && m["shard"].contains("index"))
        one["shard"] = m["shard"]["index"];
      sessions.push_back(one);
    }
  }
  if (sessions.size() > kMaxSessions)
    throw InputError("the folders hold " + std::to_string(sessions.size()) +
                     " sessions together, more than " + std::to_string(kMaxSessions));
  if (sessions.empty())
    meta.erase("sessions");
  else
    meta["sessions"] = sessions;
  const std::filesystem::path parent = std::filesystem::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (!std::filesystem::create_directory(out, ec) || ec)
    throw InputError(out + ": cannot create the merged run folder" +
                     (ec ? " (" + ec.message() + ")" : ""));
  try {
    std::filesystem::create_directory(out + "/cells");
    write_json_atomic(out + "/config.json", merged_config);
    write_json_atomic(out + "/meta.json", meta);
    const RunFolder merged = RunFolder::open(out, RunFolder::Access::Write);
    for (const auto& [id, c] : cells) merged.write_cell(id, c);
    const ReportSummary s = write_report(merged);
    std::cout << terminal_table(s.tables, terminal_width()) << "\nmerged " << dirs.size()
              << (across_models ? " runs of " + std::to_string(model_order.size()) + " models, "
                                : std::string(" shards, "))
              << s.cells << " cells into " << escaped_text(out, 2000) << "\n";
  } catch (...) {
    std::filesystem::remove_all(out, ec);
    throw;
  }
  return 0;
}

}  // namespace kvbench::cli
