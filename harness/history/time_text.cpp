#include "harness/history/time_text.h"

#include <cstdio>
#include <ctime>

namespace kvbench::history {

std::optional<int64_t> parse_utc(const std::string& text) {
  if (text.size() != 20) return std::nullopt;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char t = 0, z = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%c", &y, &mo, &d, &t, &h, &mi, &s, &z) !=
          8 ||
      t != 'T' || z != 'Z' || y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
      h > 23 || mi > 59 || s > 60 || h < 0 || mi < 0 || s < 0)
    return std::nullopt;
  std::tm utc{};
  utc.tm_year = y - 1900;
  utc.tm_mon = mo - 1;
  utc.tm_mday = d;
  utc.tm_hour = h;
  utc.tm_min = mi;
  utc.tm_sec = s;
  return static_cast<int64_t>(timegm(&utc));
}

std::string utc_day(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  if (!gmtime_r(&t, &utc)) return "?";
  char day[32];
  std::strftime(day, sizeof day, "%Y-%m-%d", &utc);
  return day;
}

}  // namespace kvbench::history
