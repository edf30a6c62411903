// kvbench pack DIR: a finished run's cells/ into one cells.jsonl.zst (the
// form results are committed in: one file instead of thousands, about 20x
// smaller), checked to read back as the same cells before cells/ goes.
#include <filesystem>
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/run/packed_cells.h"
#include "harness/run/run_folder.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace kvbench::cli {
namespace {

// The cells a finished shard holds: a shard I of N runs instances I-1,
// I-1+N, ... of the plan's (harness/run/plan.h: in_shard), each with every
// policy. A finished shard packs like a finished run, so a long job's
// shards can be stored as they finish and merged later (kvbench merge reads
// packed folders). Only for one model: a several-model shard slices each
// model's instances, which meta.json does not count apart.
int64_t shard_cells(const std::string& dir, const nlohmann::json& meta) {
  const std::string file = dir + "/meta.json";
  if (meta.contains("models"))
    throw InputError(dir +
                     ": a shard of a several-model run: merge the shards (kvbench merge), "
                     "then pack the merged folder");
  const auto count_of = [&](const nlohmann::json& j, const char* key, const std::string& where,
                            int64_t lo) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer() ||
        j[key].get<int64_t>() < lo || j[key].get<int64_t>() > 1000000000)
      throw InputError(file + ": " + where + key + ": expected an integer from " +
                       std::to_string(lo) + " to 1000000000");
    return j[key].get<int64_t>();
  };
  const int64_t index = count_of(meta["shard"], "index", "/shard/", 1);
  const int64_t count = count_of(meta["shard"], "count", "/shard/", 1);
  if (index > count)
    throw InputError(file + ": /shard/index " + std::to_string(index) + " > count " +
                     std::to_string(count));
  if (!meta.contains("plan"))
    throw InputError(file + ": /plan: missing (the shard's planned cells cannot be counted)");
  const int64_t instances = count_of(meta["plan"], "instances", "/plan/", 0);
  const int64_t policies = count_of(meta["plan"], "policies", "/plan/", 0);
  const int64_t mine = index <= instances ? (instances - index) / count + 1 : 0;
  return mine * policies;
}

}  // namespace

int cmd_pack(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("dir", po::value<std::string>()->required(), "run folder");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench pack DIR", &pos)) return 0;
  const RunFolder run = RunFolder::open(vm["dir"].as<std::string>(), RunFolder::Access::Write);
  if (run.packed()) throw InputError(run.dir() + ": already packed (" + kPackedCells + ")");
  const std::vector<nlohmann::json> cells = run.cells();
  if (cells.empty()) throw InputError(run.dir() + ": no cells to pack");
  const nlohmann::json meta = run.meta();
  int64_t planned = meta.contains("plan") ? meta["plan"].value("cells", int64_t{0}) : 0;
  if (meta.contains("shard")) planned = shard_cells(run.dir(), meta);
  if (planned > 0 && static_cast<int64_t>(cells.size()) < planned)
    throw InputError(run.dir() + ": " + std::to_string(cells.size()) + " of " +
                     std::to_string(planned) +
                     " planned cells: an unfinished run is not packed (resume it first)");
  const std::string bytes = pack_cells(cells);
  const std::string file = run.path(kPackedCells);
  write_file_atomic(file, bytes);
  // The packed file must give back exactly the cells before they go.
  if (read_packed_cells(file) != cells) {
    fs::remove(file);
    throw InputError(file + ": did not read back as the cells it was made from; cells/ kept");
  }
  fs::remove_all(run.path("cells"));
  std::cout << cells.size() << " cells packed into " << escaped_text(file, 2000) << " ("
            << bytes.size() << " bytes)\n";
  return 0;
}

}  // namespace kvbench::cli
