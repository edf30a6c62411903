// The report's "run time" line: how long the run's sessions took (meta.json's
// "sessions", harness/run/sessions.h), where and from which build.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kvbench {

// "" when meta.json records no sessions (folders from before they were
// recorded). Otherwise, plain text (the caller encodes it for its page):
// "3 h 12 min of wall time, 4 h 40 min summed over 12 sessions; CPUs: ...;
// commits: ..." (the CPU only when it is not meta.json's one "cpu", the
// commits only when there are several). Wall time is the union of the sessions' intervals, so
// shards that ran side by side count once; summed is every session's time added.
std::string run_time_text(const nlohmann::json& meta);

// 7.4 -> "7 s", 750 -> "12 min 30 s", 11520 -> "3 h 12 min".
std::string duration_text(double seconds);

}  // namespace kvbench
