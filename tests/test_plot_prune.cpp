// A re-render removes the figures it no longer draws (harness/report/
// plot_prune.h): a plot left from other cells would sit in plots/ looking
// current. Files without a report plot's name stay, and a failed gnuplot
// leaves the folder as it was.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/report/plot_prune.h"
#include "tests/support/cli_run.h"
#include "tests/support/scratch.h"
#include "tests/support/tiny_run.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using test::run_kvbench;

TEST(PlotPrune, ReportPlotNames) {
  for (const char* name :
       {"heatmaps-task3.png", "heatmaps-2-task1.svg", "needle-layers.png", "needle-layers-2.svg",
        "score-vs-ratio-all.png", "score-vs-memory.svg", "speed.png", "speed-3.svg"})
    EXPECT_TRUE(report_plot_name(name)) << name;
  for (const char* name : {"notes.png", "my-speed.png", "speed.pdf", "score-vs-ratio.png.bak",
                           "heatmaps", "README.md", ".png"})
    EXPECT_FALSE(report_plot_name(name)) << name;
}

TEST(PlotPrune, ARerenderRemovesFiguresItNoLongerDraws) {
  const std::string dir = test::scratch_folder("plot-prune", "rerender");
  // Two passkey instances x (full, window 64): heatmaps-task1, speed, ... but
  // no heatmaps-task2 and no score-vs-ratio (token budgets only).
  const std::string run = test::tiny_passkey_run(dir, "out");
  const std::string plots = run + "/plots/";
  ASSERT_TRUE(fs::exists(plots + "heatmaps-task1.png") || fs::exists(plots + "heatmaps-task1.svg"));
  ASSERT_FALSE(fs::exists(plots + "score-vs-ratio.png"));
  // What an earlier render of other cells left, and a file of the user's.
  for (const char* f : {"heatmaps-task2.png", "heatmaps-task2.svg", "score-vs-ratio.png",
                        "speed-2.svg", "notes.png"})
    std::ofstream(plots + f) << "old";

  const auto r = run_kvbench("report " + run);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f :
       {"heatmaps-task2.png", "heatmaps-task2.svg", "score-vs-ratio.png", "speed-2.svg"})
    EXPECT_FALSE(fs::exists(plots + f)) << f;
  EXPECT_TRUE(fs::exists(plots + "notes.png"));
  EXPECT_TRUE(fs::exists(plots + "heatmaps-task1.png") || fs::exists(plots + "heatmaps-task1.svg"));
  EXPECT_TRUE(fs::exists(plots + "speed.png") || fs::exists(plots + "speed.svg"));

  // gnuplot missing (not on PATH; the binary's path is absolute): no plot
  // written, none removed.
  std::ofstream(plots + "heatmaps-task2.png") << "old";
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  const auto r2 = run_kvbench("report " + run);
  setenv("PATH", path.c_str(), 1);
  ASSERT_EQ(r2.code, 0) << r2.err;
  EXPECT_NE(r2.err.find("gnuplot could not be started"), std::string::npos) << r2.err;
  EXPECT_TRUE(fs::exists(plots + "heatmaps-task2.png"));
}

}  // namespace
}  // namespace kvbench
