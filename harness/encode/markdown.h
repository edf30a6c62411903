// The Markdown sink: text from cells, configs and meta.json inside the
// markdown kvbench writes (table.md, report.md, compare's and history's
// tables).
#pragma once

#include <string>

namespace kvbench {

// Text as one markdown table cell: '|' escaped as "\|", line breaks and
// other control characters as spaces (labels are untrusted text).
std::string markdown_cell(const std::string& s);

}  // namespace kvbench
