// The CSV sink (table.csv, opened in spreadsheets and pandas), and a reader
// for the CSV kvbench writes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

// `s` as one quoted CSV field (RFC 4180: inside double quotes, '"' doubled)
// that stays one field of one line and is never a formula:
// - the terminal's encoding first (escaped_text, model/common/printable.h):
//   line breaks, control characters, C1 and bidi controls and invalid UTF-8
//   become visible escapes (\n, \x01, \u202e); backslashes stay single, so
//   every label a config can hold comes out exactly as it is;
// - a field a spreadsheet would evaluate (it begins with = + - @, or a tab
//   or carriage return, OWASP's list) gets a leading "'", which spreadsheets
//   show as text (=HYPERLINK(...) stays a label).
std::string csv_field(std::string_view s);

// The records of CSV text as kvbench writes it (quoted fields, '"'
// doubled; a record per line). At most max_records records of at most 1000
// fields; InputError (naming `source`) for more, or for a quote left open.
std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& source,
                                                size_t max_records = 1000000);

}  // namespace kvbench
