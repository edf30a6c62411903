// The harness asks policies capability questions (PolicyCache::scorer_needs,
// prefill_matches_full, kReferencePolicy), never their names: no string
// literal in harness/ code equals a registered component's name, except the
// few listed below that are the same word for something else.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "policies/registry.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;

// (file name, literal) pairs that are not policy names.
const std::map<std::string, std::set<std::string>> kSameWordElsewhere = {
    {"cmd_dataset.cpp", {"full"}},      // `dataset show --full`: the whole context
    {"cmd_bench.cpp", {"f32", "f16"}},  // `bench --kv`: the full cache's element type
    {"cli.cpp", {"merge"}},             // the `merge` subcommand
    {"cmd_perplexity.cpp", {"f32"}},    // --attention's default
    {"arithmetic.cpp", {"f32"}},        //   "  (a run's arithmetic, in reports)
    {"cmd_submit.cpp", {"merge"}},      // `submit --merge`: a job that merges the shards
    {"snapshot_file.h", {"f32"}},       // snapshot activations: f32 or q8
    {"snapshot_file.cpp", {"f32"}},     //   "
    {"snapshot_model.cpp", {"f32"}},    //   "
};

// The code of a C++ file without its // comments (string literals kept).
std::string code_of(const fs::path& p) {
  std::ifstream in(p);
  std::string line, out;
  while (std::getline(in, line)) {
    bool in_string = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"' && (i == 0 || line[i - 1] != '\\')) in_string = !in_string;
      if (!in_string && line.compare(i, 2, "//") == 0) {
        line.resize(i);
        break;
      }
    }
    out += line + "\n";
  }
  return out;
}

TEST(HarnessNames, NoPolicyNameInHarnessCode) {
  std::set<std::string> names;
  for (const auto& c : registry()) names.insert(std::string(c.name));
  ASSERT_GT(names.size(), 10u);
  const std::regex literal(R"re("([a-z0-9_]+)")re");
  int files = 0;
  std::ostringstream found;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(KVBENCH_SOURCE_DIR) / "harness")) {
    const auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".h") continue;
    ++files;
    const std::string code = code_of(e.path());
    const auto allowed = kSameWordElsewhere.find(e.path().filename().string());
    for (std::sregex_iterator m(code.begin(), code.end(), literal), end; m != end; ++m) {
      const std::string word = (*m)[1];
      if (!names.count(word)) continue;
      if (allowed != kSameWordElsewhere.end() && allowed->second.count(word)) continue;
      found << e.path().lexically_relative(KVBENCH_SOURCE_DIR).string() << ": \"" << word << "\"\n";
    }
  }
  EXPECT_GT(files, 40);
  EXPECT_EQ(found.str(), "") << "policy names in harness/ code (ask the policy instead)";
}

}  // namespace
}  // namespace kvbench
