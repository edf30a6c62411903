#include "harness/encode/gnuplot.h"

#include <cstdio>

namespace kvbench {

std::string gnuplot_string(const std::string& s) {
  // Single quotes: gnuplot expands no backslash escapes, no `command`
  // substitution and no @macros inside them; a quote is written twice.
  // A newline would end the command, so control characters are written as
  // visible escapes instead.
  std::string q = "'";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\'')
      q += "''";
    else if (c == '\n')
      q += "\\n";
    else if (c == '\r')
      q += "\\r";
    else if (c == '\t')
      q += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      q += hex;
    } else
      q += ch;
  }
  return q + "'";
}

}  // namespace kvbench
