#include "tests/support/run_output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "harness/run/run_folder.h"

namespace kvbench::test {

std::string only_run_folder(const std::string& out) {
  std::vector<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(out)) dirs.push_back(e.path().string());
  EXPECT_EQ(dirs.size(), 1u) << out;
  return dirs.empty() ? "" : dirs[0];
}

std::map<std::string, nlohmann::json> stable_cells(const std::string& dir, bool drop_work) {
  std::map<std::string, nlohmann::json> out;
  for (auto c : RunFolder::open(dir).cells()) {
    c.erase("timing");
    if (drop_work) c.erase("work");
    out[c["id"].get<std::string>()] = c;
  }
  return out;
}

}  // namespace kvbench::test
