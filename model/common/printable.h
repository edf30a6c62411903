// Text from files and command lines made safe for one-line messages and
// terminals (the terminal's encoder): control characters, C1 controls and
// invalid UTF-8 bytes become visible escapes (\n, \t, \r, \x01, \xc2\x9b),
// and so do the invisible characters that reorder or break what is shown
// around them (bidi overrides and isolates, line and paragraph separators:
// \u202e), so a quoted name never breaks an `error: ...` line, sends escape
// sequences to the terminal, nor makes a line read as something else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvbench {

// U+061C, U+200E/F, U+202A..E, U+2066..9 (the bidi controls: "Trojan Source"
// text shows in another order than it is) and U+2028/9 (line breaks to
// some readers).
bool invisible_control(uint32_t cp);

// Length of the UTF-8 sequence starting at s[i], or 0 when it is invalid
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t utf8_sequence(std::string_view s, size_t i);

// Whether s is valid UTF-8 without C0 control characters or DEL: text that
// can be one line of a file name or a gnuplot string as it is.
bool one_line_utf8(std::string_view s);

// s escaped as above, truncated at a character boundary after max_bytes
// ("..." marks the cut). escape_backslash: a backslash becomes "\\" too, so
// the escapes can be told from the text (quoted names); off for text whose
// own escapes must stay as they are (a whole error message).
std::string escaped_text(std::string_view s, size_t max_bytes, bool escape_backslash = true);

}  // namespace kvbench
