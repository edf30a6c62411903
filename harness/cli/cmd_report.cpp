// kvbench report DIR: re-renders a run folder (table, plots, report) from its
// cells — after a merge, or after changing the report code.
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/report/report.h"
#include "model/common/printable.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_report(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("dir", po::value<std::string>()->required(), "run folder");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench report DIR", &pos)) return 0;
  const RunFolder run = RunFolder::open(vm["dir"].as<std::string>(), RunFolder::Access::Write);
  const ReportSummary s = write_report(run);
  std::cout << terminal_table(s.tables, terminal_width()) << "\n" << s.cells << " cells";
  if (s.expected_cells) std::cout << " of " << s.expected_cells;
  std::cout << "; wrote " << escaped_text(run.dir(), 2000)
            << "/report.md, report.html and predictions.html\n";
  if (!s.plot_warning.empty()) std::cerr << "warning: " << s.plot_warning << "\n";
  return 0;
}

}  // namespace kvbench::cli
