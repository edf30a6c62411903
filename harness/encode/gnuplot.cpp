#include "harness/encode/gnuplot.h"

#include <cstdio>
#include <filesystem>

#include "model/common/error.h"
#include "model/common/printable.h"

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

std::string gnuplot_output(const std::string& path) {
  for (size_t i = 0, n = 0; i < path.size(); i += n) {
    const auto c = static_cast<unsigned char>(path[i]);
    n = utf8_sequence(path, i);
    if (n == 0 || c < 0x20 || c == 0x7f)
      throw InputError(escaped_text(path, 512) +
                       ": a plot's path must not hold control characters or invalid UTF-8");
  }
  const std::string absolute = std::filesystem::absolute(path).string();
  // Cannot happen (absolute paths begin with '/'); kept as the sink's own
  // guarantee, whatever `absolute` does on another system.
  if (absolute.empty() || absolute.front() != '/')
    throw InputError(escaped_text(path, 512) + ": cannot make an absolute path for gnuplot");
  return gnuplot_string(absolute);
}

}  // namespace kvbench
