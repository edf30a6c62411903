// The table `kvbench run` prints when it ends: the five columns a reader
// decides with (configuration, memory, speed, retention and score with their
// intervals), aligned and sized to the terminal. The full table (19
// columns) is in the run folder's table.md / table.csv.
#pragma once

#include <string>
#include <vector>

#include "harness/report/table.h"

namespace kvbench {

struct TerminalSection {
  std::string heading;  // the model's label with several models; empty with one
  std::vector<TableRow> rows;
};

// At most `width` display columns per line (the label is cut with "…" to
// fit; below a minimum the intervals are dropped before anything else).
// Labels are escaped for the terminal (no control characters or bidi
// overrides from someone else's config reach it).
std::string terminal_table(const std::vector<TerminalSection>& sections, int width);

// The width to print at: stdout's terminal width when it is one, else
// $COLUMNS when it is a number, else 120.
int terminal_width();

}  // namespace kvbench
