#include "harness/encode/gnuplot.h"

#include <algorithm>
#include <filesystem>

#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench {

std::string gnuplot_string(const std::string& s) {
  // The terminal's visible escapes first: a newline would end the command,
  // and control, C1 and bidi characters have no business in a figure (an
  // SVG shown in a browser would reorder text around a bidi override).
  const std::string text = escaped_text(s, s.size(), false);
  // Single quotes: gnuplot expands no backslash escapes, no `command`
  // substitution and no @macros inside them; a quote is written twice. But
  // gnuplot 5.4 reads a literal that *begins* with a doubled quote ('''a')
  // as an empty string and another token (a syntax error): leading quotes
  // go in a double-quoted string of quotes alone (no backslash, no
  // backquote in it) concatenated with the rest ("''" . 'rest').
  const size_t leading = std::min(text.find_first_not_of('\''), text.size());
  std::string out;
  if (leading > 0) {
    out = "\"" + text.substr(0, leading) + "\"";
    if (leading == text.size()) return out;
    out += " . ";
  }
  out += "'";
  for (size_t i = leading; i < text.size(); ++i)
    out += text[i] == '\'' ? std::string("''") : std::string(1, text[i]);
  return out + "'";
}

std::string gnuplot_output(const std::string& path) {
  if (!one_line_utf8(path))
    throw InputError(escaped_text(path, 512) +
                     ": a plot's path must not hold control characters or invalid UTF-8");
  const std::string absolute = std::filesystem::absolute(path).string();
  // Cannot happen (absolute paths begin with '/'); kept as the sink's own
  // guarantee, whatever `absolute` does on another system.
  if (absolute.empty() || absolute.front() != '/')
    throw InputError(escaped_text(path, 512) + ": cannot make an absolute path for gnuplot");
  return gnuplot_string(absolute);
}

}  // namespace kvbench
