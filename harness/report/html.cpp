#include "harness/report/html.h"

#include <sstream>
#include <vector>

#include "harness/encode/markdown.h"

namespace kvbench {

namespace {

// The cells of one markdown table row "| a | b \\| c |": split at each '|'
// that is not backslash-escaped, each trimmed, then shown as a Markdown
// viewer shows it (markdown_unescape: markdown_cell's escapes undone).
std::vector<std::string> row_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size()) {
      cell += line.substr(i, 2);  // an escape: both characters, never a split
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  if (!cell.empty()) cells.push_back(cell);  // a row without its closing bar
  for (auto& c : cells) {
    const auto b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
    c = markdown_unescape(b == std::string::npos ? "" : c.substr(b, e - b + 1));
  }
  return cells;
}

// A figure cell ("1.000 [0.610, 1.000]", "48.51 MiB", "Wilson, n=6") breaks
// only before its interval's bracket: every other space becomes a no-break
// space, so a narrow column shows the value over its interval instead of
// scattering them over three lines. `s` is escaped HTML.
std::string keep_together(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i)
    out += s[i] == ' ' && !(i + 1 < s.size() && s[i + 1] == '[') ? std::string("&nbsp;")
                                                                 : std::string(1, s[i]);
  return out;
}

}  // namespace

std::string markdown_table_to_html(const std::string& md,
                                   const std::function<std::string(int)>& link) {
  std::istringstream in(md);
  std::string line;
  std::ostringstream o;
  o << "<table>\n";
  int row = 0;
  while (std::getline(in, line)) {
    if (line.size() < 2 || line[0] != '|') continue;
    if (row++ == 1) continue;  // the |---| rule
    const bool header = row == 1;
    o << "<tr>";
    bool first = true;
    for (const std::string& text : row_cells(line)) {
      const std::string href = !header && first && link ? link(row - 3) : "";
      o << (header ? "<th>" : "<td>");
      if (href.empty() && !header && !first)
        o << keep_together(html_escape(text));
      else if (href.empty())
        o << html_escape(text);
      else
        o << "<a href=\"" << html_escape(href) << "\">" << html_escape(text) << "</a>";
      o << (header ? "</th>" : "</td>");
      first = false;
    }
    o << "</tr>\n";
  }
  return o.str() + "</table>\n";
}

std::string cell_anchor(const std::string& cell_id) { return "cell-" + cell_id; }

}  // namespace kvbench
