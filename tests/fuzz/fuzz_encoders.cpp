// libFuzzer target for the sinks' encoders (harness/encode) and the CSV
// reader report uses on a folder's table.csv. For any bytes:
// - parse_csv returns or throws InputError (bounded records and fields);
// - csv_field gives one field of one record, never a formula, that reads
//   back as the terminal's encoding of the input;
// - markdown_text shows (markdown_unescape) exactly the terminal's
//   encoding, on one line, with no markup character unescaped;
// - html_escape leaves no tag, quote or control character but line breaks;
// - gnuplot_string holds no control character and ends where it should.
// A violated property aborts (a finding).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "harness/encode/csv.h"
#include "harness/encode/gnuplot.h"
#include "harness/encode/html.h"
#include "harness/encode/markdown.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool has_control(const std::string& s, bool allow_newline) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && !(allow_newline && c == '\n')) || c == 0x7f) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    const auto records = parse_csv(input, "fuzz", 1000);
    check(records.size() <= 1000);
    for (const auto& r : records) check(r.size() <= 1000);
  } catch (const InputError&) {
  }

  const std::string field = csv_field(input);
  check(!has_control(field, false));
  const auto back = parse_csv(field + "\n", "fuzz");
  check(back.size() == 1 && back[0].size() == 1);
  const std::string& value = back[0][0];
  check(value.empty() || std::string("=+-@\t\r").find(value[0]) == std::string::npos);
  const std::string terminal = escaped_text(input, input.size(), false);
  check(value == terminal || value == "'" + terminal);

  const std::string md = markdown_text(input, input.size());
  check(!has_control(md, false));
  check(markdown_unescape(md) == terminal);
  for (size_t i = 0; i < md.size(); ++i) {
    if (md[i] == '\\') {
      ++i;  // an escape: the next character is shown as it is
      continue;
    }
    check(std::string("<>&`*_[]|~#$@").find(md[i]) == std::string::npos);
  }

  const std::string html = html_escape(input);
  check(!has_control(html, true));
  check(html.find_first_of("<>\"'") == std::string::npos);

  // gnuplot: ["<leading quotes>" . ]'<rest, quotes doubled>', reading back
  // as the terminal's encoding.
  const std::string gp = gnuplot_string(input);
  check(!has_control(gp, false));
  const size_t lead = std::min(terminal.find_first_not_of('\''), terminal.size());
  std::string rest = gp;
  if (lead > 0) {
    const std::string prefix = "\"" + terminal.substr(0, lead) + "\"";
    check(gp.compare(0, prefix.size(), prefix) == 0);
    rest = gp.substr(prefix.size());
    if (lead == terminal.size()) {
      check(rest.empty());
      return 0;
    }
    check(rest.compare(0, 3, " . ") == 0);
    rest = rest.substr(3);
  }
  check(rest.size() >= 2 && rest.front() == '\'' && rest.back() == '\'');
  std::string literal;
  for (size_t i = 1; i + 1 < rest.size(); ++i) {
    if (rest[i] == '\'') check(rest[++i] == '\'');  // every quote doubled
    literal += rest[i];
  }
  check(literal == terminal.substr(lead));
  return 0;
}
