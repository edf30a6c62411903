#include "harness/encode/markdown.h"

namespace kvbench {

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace kvbench
