// What the CLI run tests read back from a finished `kvbench run --out DIR`.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace kvbench::test {

// The one entry under a run's --out folder: the run folder it made.
std::string only_run_folder(const std::string& out);

// A run folder's cells by id without "timing" (what varies between runs)
// and, with drop_work, without "work" (what varies with prefill sharing and
// with how a run was sharded).
std::map<std::string, nlohmann::json> stable_cells(const std::string& dir, bool drop_work = false);

}  // namespace kvbench::test
