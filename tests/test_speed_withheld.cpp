// `kvbench report DIR --withhold-speed REASON` (harness/report/speed_withheld.h):
// the mark in meta.json, a report with no speed from the cells' timings, the
// cells untouched, compare without speed, merge keeping the mark, and the
// reasons and meta values it refuses (one error line, nothing written).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/scratch.h"
#include "tests/support/tiny_run.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::run_kvbench;
using test::slurp;

using test::tiny_passkey_run;

TEST(SpeedWithheld, TheReportPrintsNoSpeedAndTheCellsKeepTheirTimings) {
  const std::string dir = test::scratch_folder("speed-withheld", "report");
  const std::string run = tiny_passkey_run(dir, "a");
  ASSERT_NE(slurp(run + "/report.md").find("| Inference Speed |"), std::string::npos);
  ASSERT_TRUE(fs::exists(run + "/plots/speed.svg") || fs::exists(run + "/plots/speed.png"));
  const std::string cells_before =
      slurp(run + "/cells/" + fs::directory_iterator(run + "/cells")->path().filename().string());

  const std::string reason = "paused with SIGSTOP <script>alert(1)</script> | `rm`";
  const auto r = run_kvbench("report " + run + " --withhold-speed '" + reason + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json meta = json::parse(std::ifstream(run + "/meta.json"));
  EXPECT_EQ(meta["speed_withheld"], reason);
  const std::string md = slurp(run + "/report.md");
  EXPECT_NE(md.find("Not reported: paused with SIGSTOP"), std::string::npos) << md;
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_EQ(md.find("| Decode tok/s | Prefill tok/s | TTFT s | Inference Speed |"),
            std::string::npos);  // no speed table
  EXPECT_EQ(slurp(run + "/report.html").find("<script>alert"), std::string::npos);
  // table.csv: no speed figure in any row (empty speed_rel and its interval).
  const std::string csv = slurp(run + "/table.csv");
  std::istringstream lines(csv);
  std::string header, line;
  std::getline(lines, header);
  const auto column = [&](const std::string& row, const std::string& name) {
    size_t at = 0, col = 0;
    const size_t want = std::count(header.begin(), header.begin() + header.find(name), ',');
    while (col < want) at = row.find(',', at) + 1, ++col;
    return row.substr(at, row.find(',', at) - at);
  };
  int rows = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(column(line, "speed_rel"), "") << line;
    ++rows;
  }
  EXPECT_EQ(rows, 2);
  EXPECT_FALSE(fs::exists(run + "/plots/speed.svg"));
  EXPECT_FALSE(fs::exists(run + "/plots/speed.png"));
  // The cells are untouched; cells.csv leaves the timings out.
  EXPECT_EQ(
      slurp(run + "/cells/" + fs::directory_iterator(run + "/cells")->path().filename().string()),
      cells_before);
  EXPECT_NE(cells_before.find("decode_tok_s"), std::string::npos);
  for (const json& c : json::parse(slurp(run + "/metrics.json"))["per_cell"])
    EXPECT_FALSE(c.contains("timing") && c["timing"].contains("decode_tok_s")) << c.dump();
  // A plain re-render keeps the mark.
  ASSERT_EQ(run_kvbench("report " + run).code, 0);
  EXPECT_NE(slurp(run + "/report.md").find("Not reported: paused"), std::string::npos);

  // compare says so, and shows no speed for that run.
  const std::string other = tiny_passkey_run(dir, "b");
  const auto c = run_kvbench("compare " + other + " " + run);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("The new run's timings are withheld, so it has no speed here: paused"),
            std::string::npos)
      << c.out;
  EXPECT_EQ(c.out.find("<script>"), std::string::npos);
}

TEST(SpeedWithheld, BadReasonsAndValuesGiveOneErrorLineAndWriteNothing) {
  const std::string dir = test::scratch_folder("speed-withheld", "bad");
  const std::string run = tiny_passkey_run(dir, "a");
  const std::string meta = slurp(run + "/meta.json"), md = slurp(run + "/report.md");
  const std::string long_reason(1001, 'x');
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--withhold-speed ''", "--withhold-speed: give the reason"},
           {"--withhold-speed \"$(printf 'a\\nb')\"", "expected one line of UTF-8"},
           {"--withhold-speed \"$(printf 'a\\033[31m')\"", "expected one line of UTF-8"},
           {"--withhold-speed " + long_reason, "1001 bytes, more than 1000"},
           {"--withhold-speed x --versus Full Window", "--withhold-speed goes without --versus"},
       }) {
    test::expect_input_error(run_kvbench("report " + run + " " + args), message);
    EXPECT_EQ(slurp(run + "/meta.json"), meta) << args;
    EXPECT_EQ(slurp(run + "/report.md"), md) << args;
  }
  // A meta.json from someone else with a bad value: the field named.
  for (const char* value : {"5", "\"\"", "null"}) {
    json m = json::parse(meta);
    m["speed_withheld"] = json::parse(value);
    std::ofstream(run + "/meta.json") << m.dump();
    test::expect_input_error(run_kvbench("report " + run),
                             "meta.json: /speed_withheld: expected a reason of 1 to 1000 bytes");
  }
}

TEST(SpeedWithheld, AMergeKeepsTheMarkOfAnyShard) {
  const std::string dir = test::scratch_folder("speed-withheld", "merge");
  const std::string one = tiny_passkey_run(dir, "s1", 1), two = tiny_passkey_run(dir, "s2", 2);
  ASSERT_EQ(run_kvbench("report " + two + " --withhold-speed 'shared the cores'").code, 0);
  const auto m = run_kvbench("merge " + one + " " + two + " -o " + dir + "/merged");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(json::parse(std::ifstream(dir + "/merged/meta.json"))["speed_withheld"],
            "shared the cores");
  EXPECT_NE(slurp(dir + "/merged/report.md").find("Not reported: shared the cores"),
            std::string::npos);
}

}  // namespace
}  // namespace kvbench
