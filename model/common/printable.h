// Text from files and command lines made safe for one-line messages and
// terminals: control characters, C1 controls and invalid UTF-8 bytes become
// visible escapes (\n, \t, \r, \x01), so a quoted name never breaks an
// `error: ...` line nor sends escape sequences to the terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kvbench {

// Length of the UTF-8 sequence starting at s[i], or 0 when it is invalid
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t utf8_sequence(std::string_view s, size_t i);

// s escaped as above, truncated at a character boundary after max_bytes
// ("..." marks the cut). escape_backslash: a backslash becomes "\\" too, so
// the escapes can be told from the text (quoted names); off for text whose
// own escapes must stay as they are (a whole error message).
std::string escaped_text(std::string_view s, size_t max_bytes, bool escape_backslash = true);

// escaped_text() as one markdown table cell: a '|' is escaped too, so the
// text cannot end its cell (compare's and history's tables).
std::string escaped_cell_text(std::string_view s, size_t max_bytes = 200);

}  // namespace kvbench
