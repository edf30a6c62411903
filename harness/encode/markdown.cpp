#include "harness/encode/markdown.h"

#include <cctype>
#include <cstring>

#include "model/common/printable.h"

namespace kvbench {
namespace {

bool markup(char c) { return c != 0 && std::strchr("<>&`*_[]|~#$@", c) != nullptr; }

// Where GitHub-flavoured Markdown would make a link of plain text: the ':'
// of "://" and the '.' of a "www." that starts a word.
bool autolink_mark(const std::string& t, size_t i) {
  if (t[i] == ':') return t.compare(i, 3, "://") == 0;
  if (t[i] != '.' || i < 3 || t.compare(i - 3, 3, "www") != 0) return false;
  return i == 3 || !std::isalnum(static_cast<unsigned char>(t[i - 4]));
}

}  // namespace

std::string markdown_text(std::string_view s, size_t max_bytes, bool at_line_start) {
  const std::string text = escaped_text(s, max_bytes);
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  if (at_line_start) {
    // A block marker: "- ", "+ ", "=", or digits then '.' or ')'.
    const size_t digits = text.find_first_not_of("0123456789");
    if (!text.empty() && (text[0] == '-' || text[0] == '+' || text[0] == '=')) {
      out += '\\';
    } else if (digits != std::string::npos && digits > 0 &&
               (text[digits] == '.' || text[digits] == ')')) {
      out += text.substr(0, digits) + '\\';
      i = digits;
    }
  }
  for (; i < text.size(); ++i) {
    // escaped_text's own escapes begin with a backslash: "\\" stays a
    // literal backslash in Markdown, "\n" / "\x01" / "\u202e" stay as shown.
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\\') {
      out += "\\\\";
      ++i;
      continue;
    }
    if (markup(text[i]) || autolink_mark(text, i)) out += '\\';
    out += text[i];
  }
  return out;
}

std::string markdown_cell(const std::string& s) { return markdown_text(s, 200); }

std::string markdown_unescape(std::string_view md) {
  std::string out;
  out.reserve(md.size());
  for (size_t i = 0; i < md.size(); ++i) {
    if (md[i] == '\\' && i + 1 < md.size() && std::ispunct(static_cast<unsigned char>(md[i + 1])))
      ++i;
    out += md[i];
  }
  return out;
}

}  // namespace kvbench
