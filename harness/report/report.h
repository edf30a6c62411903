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

// Renders the folder's report from its cells. `withhold_speed`: a checked
// reason (checked_speed_reason) to record in meta.json first, once the cells
// and tables have passed their checks (kvbench report --withhold-speed).
ReportSummary write_report(const RunFolder& run, const std::string& withhold_speed = "");

}  // namespace kvbench
