#include "harness/encode/csv.h"

#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench {

std::string csv_field(std::string_view s) {
  // Backslashes stay single: a label a config may hold (no control
  // characters) comes out exactly as it is.
  const std::string text = escaped_text(s, s.size(), false);
  std::string out = "\"";
  if (!s.empty() &&
      (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r'))
    out += '\'';
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& source,
                                                size_t max_records) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, any = false;
  const auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    record.clear();
    any = false;
    if (records.size() > max_records)
      throw InputError(source + ": more than " + std::to_string(max_records) + " records");
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
      continue;
    }
    any = true;
    if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      if (record.size() >= 1000) throw InputError(source + ": a record of more than 1000 fields");
    } else if (c == '\n') {
      end_record();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) throw InputError(source + ": a quoted field is not closed");
  if (any || !record.empty() || !field.empty()) end_record();
  return records;
}

}  // namespace kvbench
