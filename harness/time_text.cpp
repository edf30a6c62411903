#include "harness/time_text.h"

#include <algorithm>
#include <ctime>

namespace kvbench {
namespace {

// The number at text[at, at + n) when all n characters are ASCII digits.
std::optional<int> digits(const std::string& text, size_t at, size_t n) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<int64_t> parse_utc(const std::string& text) {
  // Fixed positions rather than sscanf: "%d" skips spaces, takes a sign and
  // overflows silently; here every character is checked.
  if (text.size() != 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':' || text[19] != 'Z')
    return std::nullopt;
  const auto y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2),
             h = digits(text, 11, 2), mi = digits(text, 14, 2), s = digits(text, 17, 2);
  if (!y || !mo || !d || !h || !mi || !s || *y < 1970 || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 ||
      *h > 23 || *mi > 59 || *s > 59)
    return std::nullopt;
  std::tm utc{};
  utc.tm_year = *y - 1900;
  utc.tm_mon = *mo - 1;
  utc.tm_mday = *d;
  utc.tm_hour = *h;
  utc.tm_min = *mi;
  utc.tm_sec = *s;
  const int64_t t = static_cast<int64_t>(timegm(&utc));
  // timegm normalizes (February 30 becomes March 2): a date that does not
  // exist comes back with other fields.
  if (utc.tm_mday != *d || utc.tm_mon != *mo - 1 || !time_in_range(t)) return std::nullopt;
  return t;
}

std::optional<int64_t> parse_unix_seconds(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;  // 19 digits cannot overflow int64
  int64_t t = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    t = t * 10 + (c - '0');
  }
  if (!time_in_range(t)) return std::nullopt;
  return t;
}

std::string utc_day(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(std::clamp(unix_seconds, kMinTime, kMaxTime));
  std::tm utc{};
  gmtime_r(&t, &utc);  // defined for every time in the range
  char day[32];
  std::strftime(day, sizeof day, "%Y-%m-%d", &utc);
  return day;
}

}  // namespace kvbench
