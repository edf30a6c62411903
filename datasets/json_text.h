// Parsing JSON that may come from someone else, at one place: nesting is
// limited before the parser runs (deep documents overflow the stack in
// recursive code: dump(), the destructor, error messages), and every
// nlohmann::json error — syntax, a number that overflows a double (1e999),
// invalid UTF-8 — becomes one InputError naming the source.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kvbench {

constexpr int kMaxJsonDepth = 64;

// InputError "<source>: nested deeper than 64 levels (at byte N)" when the
// text opens more arrays/objects than that (strings are skipped).
void check_json_depth(std::string_view text, const std::string& source);

// InputError "<source>: parse error at line L, column C: ..." or
// "<source>: number overflow parsing '1e999'" (the library's text without its
// "[json.exception...]" prefix).
nlohmann::json parse_json_text(std::string_view text, const std::string& source);
nlohmann::ordered_json parse_ordered_json_text(std::string_view text, const std::string& source);

// A whole JSON file (regular files only, at most max_bytes).
nlohmann::json read_json_file_bounded(const std::string& path, size_t max_bytes);

}  // namespace kvbench
