#include "harness/encode/html.h"

#include "model/common/printable.h"

namespace kvbench {

std::string html_escape(const std::string& text) {
  // Line by line through the terminal's encoder, the line breaks kept.
  std::string s;
  s.reserve(text.size());
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    s += escaped_text(std::string_view(text).substr(begin, end - begin), end - begin, false);
    if (end < text.size()) s += '\n';
    begin = end + 1;
  }
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

}  // namespace kvbench
