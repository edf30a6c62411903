// The Markdown sink: text from cells, configs and meta.json inside the
// markdown kvbench writes (table.md, report.md, compare's and history's
// tables) and prints to a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kvbench {

// `s` as Markdown inline text that shows exactly its characters, on one
// line, in a Markdown viewer (raw HTML passed through included) and on a
// terminal alike:
// - first the terminal's encoding (escaped_text, model/common/printable.h):
//   control characters, C1 controls, bidi controls and invalid UTF-8 become
//   visible escapes (\n, \x01, \u202e), a backslash becomes "\\" (which
//   Markdown shows as one backslash); cut after max_bytes ("...");
// - then every character that Markdown or HTML would read as markup is
//   backslash-escaped (CommonMark shows "\<" as "<"): < > & ` * _ [ ] | ~ #
//   $ @, and the ':' of "://" and the '.' of "www.", so no label opens a tag
//   (<script>, <img onerror>), an entity, a code span, emphasis, math, a
//   link or autolink, or a table cell;
// - at_line_start: also the characters that would start a block there (a
//   list's - + or "1.", a setext underline's =).
std::string markdown_text(std::string_view s, size_t max_bytes = 4096, bool at_line_start = false);

// markdown_text as one table cell (at most 200 bytes).
std::string markdown_cell(const std::string& s);

// What a Markdown viewer shows for markdown_text's output: a backslash
// before ASCII punctuation is dropped (the tests' and the fuzzer's oracle
// for markdown_text; the HTML report renders its tables with md4c).
std::string markdown_unescape(std::string_view md);

}  // namespace kvbench
