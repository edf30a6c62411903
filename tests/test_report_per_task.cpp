// The report's per-task table on constructed cells: a row per configuration
// in the table's order, a column per task, and a column per length for a
// task run at several lengths, each with its own interval and n.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/report/per_task.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

json cell(const std::string& task, int length, int i, int index, const std::string& label,
          double score) {
  const std::string inst = task + "-L" + std::to_string(length) + "-" + std::to_string(i);
  return {{"id", inst + "--" + label},
          {"instance", {{"id", inst}, {"task", task}, {"length", length}}},
          {"policy", {{"index", index}, {"label", label}}},
          {"score", score}};
}

TEST(ReportPerTask, AConfigurationPerRowAndATaskAtSeveralLengthsPerLength) {
  std::vector<json> cells;
  // niah at 4096 (4 instances, all pass for full, none for "evict") and at
  // 8000 (2 instances, one pass for full); passkey only at 4096 (3 instances).
  for (int i = 0; i < 4; ++i) {
    cells.push_back(cell("niah", 4096, i, 1, "evict", 0.0));
    cells.push_back(cell("niah", 4096, i, 0, "full", 1.0));
  }
  for (int i = 0; i < 2; ++i) {
    cells.push_back(cell("niah", 8000, i, 0, "full", i == 0 ? 1.0 : 0.0));
    cells.push_back(cell("niah", 8000, i, 1, "evict", 0.0));
  }
  for (int i = 0; i < 3; ++i) cells.push_back(cell("passkey", 4096, i, 0, "full", 1.0));
  const std::string md = per_task_markdown(cells);
  const auto lines = [&] {
    std::vector<std::string> out;
    size_t at = 0;
    for (size_t nl; (nl = md.find('\n', at)) != std::string::npos; at = nl + 1)
      out.push_back(md.substr(at, nl - at));
    return out;
  }();
  ASSERT_EQ(lines.size(), 4u) << md;
  // Lengths in numeric order; passkey, at one length, has no length.
  EXPECT_EQ(lines[0], "| Configuration | niah at 4096 | niah at 8000 | passkey |");
  EXPECT_EQ(lines[1], "|---|---:|---:|---:|");
  // full (index 0) first, though "evict" was seen first.
  EXPECT_EQ(lines[2].rfind("| full | 1.000 [", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("W n=4 | 0.500 ["), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("W n=2 | 1.000 ["), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("W n=3 |"), std::string::npos) << lines[2];
  // A configuration without cells of a column shows a dash there.
  EXPECT_EQ(lines[3].rfind("| evict | 0.000 [", 0), 0u) << lines[3];
  EXPECT_NE(lines[3].find("W n=2 | – |"), std::string::npos) << lines[3];
}

TEST(ReportPerTask, ATaskAtOneLengthKeepsItsPlainName) {
  std::vector<json> cells;
  for (int i = 0; i < 2; ++i) cells.push_back(cell("qa", 2048, i, 0, "full", 1.0));
  // A cell without a length (a perplexity text) stays in the task's column.
  json text = cell("qa", 2048, 2, 0, "full", 0.0);
  text["instance"].erase("length");
  cells.push_back(text);
  const std::string md = per_task_markdown(cells);
  EXPECT_EQ(md.rfind("| Configuration | qa |\n", 0), 0u) << md;
}

}  // namespace
}  // namespace kvbench
