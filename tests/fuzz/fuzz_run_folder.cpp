// libFuzzer target for run-folder readers (report, compare, merge). The input
// is split at NUL bytes into config.json, meta.json and cells/c0.json,
// cells/c1.json, ... of a scratch run folder. Any input must be refused with
// InputError or be read whole: the cells and meta checked, the table built
// and rendered (markdown, CSV, JSON; per model too), the cells as tidy rows (cells.csv,
// cells.jsonl), and the folder compared with itself without a regression (and the
// comparison rendered as JSON).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/report/cells_table.h"
#include "harness/report/compare.h"
#include "harness/report/compare_json.h"
#include "harness/report/models.h"
#include "harness/report/run_time.h"
#include "harness/report/speed_withheld.h"
#include "harness/report/table.h"
#include "harness/run/machines.h"
#include "harness/run/run_folder.h"
#include "model/common/error.h"
#include "tests/fuzz/fuzz_files.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  using fuzz::write_file;
  static const std::string dir = fuzz::scratch_path("fuzz_run_folder");
  fs::remove_all(dir);
  fs::create_directories(dir + "/cells");
  std::vector<std::string> parts;
  const std::string input = fuzz::input_text(data, size);
  for (size_t at = 0; parts.size() < 10;) {
    const size_t nul = input.find('\0', at);
    parts.push_back(input.substr(at, nul == std::string::npos ? std::string::npos : nul - at));
    if (nul == std::string::npos) break;
    at = nul + 1;
  }
  write_file(dir + "/config.json", parts[0]);
  if (parts.size() > 1) write_file(dir + "/meta.json", parts[1]);
  for (size_t i = 2; i < parts.size(); ++i)
    write_file(dir + "/cells/c" + std::to_string(i - 2) + ".json", parts[i]);
  try {
    const RunFolder run = RunFolder::open(dir);
    const nlohmann::json meta = run.meta();
    (void)run_time_text(meta);  // the report's run-time line, from checked sessions
    // The report's machines lines (a merge of shards from several machines).
    if (meta.contains("machines")) (void)machines_text(meta["machines"]);
    if (meta.contains("models"))
      for (const auto& m : meta["models"])
        if (m.contains("machines")) (void)machines_text(m["machines"]);
    // A run whose timings are withheld is tabled without them (speed_withheld.h).
    const auto cells = speed_withheld(meta).empty() ? run.cells() : without_speed(run.cells());
    const auto rows = build_table(cells);
    (void)table_markdown(rows);
    (void)table_csv({{"m", &rows}});
    (void)dump_json(table_json(rows));
    // The report's per-model tables (a run of several models).
    const auto sections = split_by_model(cells, run.config());
    for (const auto& section : sections) (void)table_markdown(build_table(section.cells));
    // cells.csv and cells.jsonl of any cells that passed the checks.
    const auto cell_table = cell_rows(sections);
    (void)cells_csv(cell_table);
    (void)cells_jsonl(cell_table);
    const CompareResult self = compare_runs(dir, dir, 0.0);
    if (self.regressed) std::abort();  // a folder never regresses against itself
    (void)compare_json_text(self);
  } catch (const InputError&) {
  }
  return 0;
}
