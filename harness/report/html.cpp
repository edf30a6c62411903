#include "harness/report/html.h"

#include <md4c-html.h>

#include <sstream>

namespace kvbench {

namespace {

// The byte offset of the '|' that ends a table row's first cell (the row
// starts with '|'; a backslash escapes the next character, markdown_cell's
// escapes included), or npos.
size_t first_cell_end(const std::string& line) {
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\')
      ++i;
    else if (line[i] == '|')
      return i;
  }
  return std::string::npos;
}

// A link destination md4c takes whole inside <...>: kvbench's own file
// names and anchors, never a '<', '>', backslash or line break.
bool plain_destination(const std::string& href) {
  for (unsigned char c : href)
    if (c < 0x20 || c == '<' || c == '>' || c == '\\' || c == 0x7f) return false;
  return !href.empty();
}

}  // namespace

std::string markdown_table_to_html(const std::string& md,
                                   const std::function<std::string(int)>& link) {
  // The first cell of each body row becomes a Markdown link when the caller
  // gives one; md4c then renders the table (its cells are kvbench's own
  // markdown, every label already through markdown_cell). Raw HTML is off:
  // whatever a cell holds comes out as text.
  std::istringstream in(md);
  std::ostringstream table;
  int row = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 2 || line[0] != '|') continue;
    const int body_row = row++ - 2;  // after the header and the |---| rule
    const size_t end = first_cell_end(line);
    const std::string href =
        body_row >= 0 && link && end != std::string::npos ? link(body_row) : "";
    if (!plain_destination(href)) {
      table << line << "\n";
      continue;
    }
    std::string text = line.substr(1, end - 1);
    const size_t b = text.find_first_not_of(' '), e = text.find_last_not_of(' ');
    text = b == std::string::npos ? "" : text.substr(b, e - b + 1);
    table << "| [" << text << "](<" << href << ">) " << line.substr(end) << "\n";
  }
  const std::string text = table.str();
  std::string html;
  const auto sink = [](const MD_CHAR* s, MD_SIZE size, void* out) {
    static_cast<std::string*>(out)->append(s, size);
  };
  if (md_html(text.data(), static_cast<MD_SIZE>(text.size()), sink, &html,
              MD_FLAG_TABLES | MD_FLAG_NOHTML, 0) != 0)
    return "<p>(a table could not be rendered)</p>\n";
  return html;
}

std::string cell_anchor(const std::string& cell_id) { return "cell-" + cell_id; }

}  // namespace kvbench
