// kvbench merge DIR... -o DIR: combines the shards of one experiment (run
// with --shard I/N, e.g. as a Slurm job array) into one run folder and
// renders its report. The shards must come from the same resolved config; a
// cell present in two shards must be identical apart from timing fields; and
// when every folder is a shard, all N shards of the split must be there (a
// failed array task must not turn into a merged run that lacks its cells).
#include <filesystem>
#include <iostream>
#include <map>

#include "harness/cli/cli.h"
#include "harness/report/report.h"
#include "harness/run/run_folder.h"
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

}  // namespace

int cmd_merge(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("dirs", po::value<std::vector<std::string>>()->required()->multitoken(),
                     "shard run folders")("output,o", po::value<std::string>()->required(),
                                          "merged run folder (must not exist)");
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
  std::vector<RunFolder> shards;
  for (const auto& d : dirs) shards.push_back(RunFolder::open(d));
  // Where each shard was written (--out) is no part of the experiment.
  auto experiment_of = [](nlohmann::json c) {
    c.erase("output");
    return c;
  };
  const auto& config = shards.front().config();
  std::map<std::string, nlohmann::json> cells;
  for (const auto& s : shards) {
    if (experiment_of(s.config()) != experiment_of(config))
      throw InputError(s.dir() + ": its config.json differs from " + shards.front().dir() +
                       "'s (shards must come from the same experiment and overrides)");
    for (auto& c : s.cells()) {
      const std::string id = c["id"].get<std::string>();
      auto [it, fresh] = cells.emplace(id, c);
      if (fresh) continue;
      nlohmann::json a = it->second, b = c;
      a.erase("timing");
      b.erase("timing");
      if (a != b)
        throw InputError(s.dir() + ": cell " + id + " differs from the same cell in another shard");
    }
  }
  check_split(shards);
  nlohmann::json meta = shards.front().meta();
  meta["merged_from"] = dirs;
  meta.erase("shard");
  // Work counters add up over the shards.
  int64_t computed = 0, naive = 0;
  for (const auto& s : shards) {
    const auto m = s.meta();
    if (m.contains("work")) {
      computed += m["work"].value("prefill_tokens_computed", int64_t{0});
      naive += m["work"].value("prefill_tokens_naive", int64_t{0});
    }
  }
  meta["work"] = {{"prefill_tokens_computed", computed}, {"prefill_tokens_naive", naive}};
  const std::filesystem::path parent = std::filesystem::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (!std::filesystem::create_directory(out, ec) || ec)
    throw InputError(out + ": cannot create the merged run folder" +
                     (ec ? " (" + ec.message() + ")" : ""));
  try {
    std::filesystem::create_directory(out + "/cells");
    write_json_atomic(out + "/config.json", config);
    write_json_atomic(out + "/meta.json", meta);
    const RunFolder merged = RunFolder::open(out, RunFolder::Access::Write);
    for (const auto& [id, c] : cells) merged.write_cell(id, c);
    const ReportSummary s = write_report(merged);
    std::cout << terminal_table(s.tables, terminal_width()) << "\nmerged " << dirs.size()
              << " shards, " << s.cells << " cells into " << escaped_text(out, 2000) << "\n";
  } catch (...) {
    std::filesystem::remove_all(out, ec);
    throw;
  }
  return 0;
}

}  // namespace kvbench::cli
