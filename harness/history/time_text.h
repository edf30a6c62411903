// The history's timestamps: run start times as meta.json writes them
// ("2026-11-21T07:26:00Z", UTC) and commit dates (unix seconds) shown as days.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvbench::history {

// Unix seconds of "YYYY-MM-DDTHH:MM:SSZ"; nullopt for anything else.
std::optional<int64_t> parse_utc(const std::string& text);

// "2026-11-21" (UTC) for unix seconds.
std::string utc_day(int64_t unix_seconds);

}  // namespace kvbench::history
