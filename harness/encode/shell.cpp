#include "harness/encode/shell.h"

#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench {

std::string shell_quote(std::string_view text) {
  // A NUL ends a C string: sh would read less than the word given.
  if (text.find('\0') != std::string_view::npos)
    throw InputError(escaped_text(text, 512) + ": must not contain a NUL character (a shell word)");
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace kvbench
