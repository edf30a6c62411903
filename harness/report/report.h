// Renders a run folder from its cells: metrics.json, predictions.jsonl,
// table.md, table.csv, cells.csv and cells.jsonl (harness/report/cells_table.h),
// plots/ and report.md / report.html (plots embedded as inline SVG). Deterministic given the cells;
// `kvbench report DIR` re-runs it. A run of several models is sectioned by model
// (harness/report/models.h); a run of one renders exactly as before models could be listed.
#pragma once

#include <string>

#include "harness/report/terminal_table.h"
#include "harness/run/run_folder.h"

namespace kvbench {

struct ReportSummary {
  int cells = 0;
  int expected_cells = 0;  // from meta.json's plan, when known
  std::string table_markdown;
  std::vector<TerminalSection> tables;  // each model's rows, for the terminal
  std::string plot_warning;
};

ReportSummary write_report(const RunFolder& run);

}  // namespace kvbench
