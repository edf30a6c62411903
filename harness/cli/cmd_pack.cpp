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
  if (meta.contains("shard"))
    throw InputError(run.dir() +
                     ": a shard of a run: merge the shards (kvbench merge), then pack the merged "
                     "folder");
  const int64_t planned = meta.contains("plan") ? meta["plan"].value("cells", int64_t{0}) : 0;
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
