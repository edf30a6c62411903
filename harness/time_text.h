// Timestamps of runs and the history: start times as meta.json writes them
// ("2026-11-21T07:26:00Z", UTC) and commit dates (unix seconds) shown as days.
//
// Every time the history stores or reads lies in [kMinTime, kMaxTime]
// (1970-01-01 to 9999-12-31 UTC): what parse_utc accepts, and a range in
// which gmtime, strftime's four-digit year and the "YYYY-MM-DD" a plot tic
// cuts from are all defined. A time from git or from a database outside it is
// refused where it is read (add.cpp, trend.cpp), naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvbench {

inline constexpr int64_t kMinTime = 0;             // 1970-01-01T00:00:00Z
inline constexpr int64_t kMaxTime = 253402300799;  // 9999-12-31T23:59:59Z

inline bool time_in_range(int64_t unix_seconds) {
  return unix_seconds >= kMinTime && unix_seconds <= kMaxTime;
}

// Unix seconds of "YYYY-MM-DDTHH:MM:SSZ" (exactly those 20 characters, a
// date that exists, years 1970 to 9999); nullopt for anything else.
std::optional<int64_t> parse_utc(const std::string& text);

// Unix seconds of a decimal integer as git's %ct prints it (digits only, at
// most 19 of them, no sign, no space), when it lies in [kMinTime, kMaxTime];
// nullopt otherwise.
std::optional<int64_t> parse_unix_seconds(const std::string& text);

// "2026-11-21" (UTC) for unix seconds: always ten characters. Callers pass a
// checked time; one outside the range is clamped to it, never formatted
// through an undefined gmtime.
std::string utc_day(int64_t unix_seconds);

}  // namespace kvbench
