#include "harness/report/run_time.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness/run/sessions.h"

namespace kvbench {

std::string duration_text(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

std::string run_time_text(const nlohmann::json& meta) {
  if (!meta.contains("sessions") || !meta["sessions"].is_array() || meta["sessions"].empty())
    return "";
  const SessionTime t = session_time(meta["sessions"]);
  std::string out = duration_text(t.wall_seconds) + " of wall time";
  if (t.sessions > 1)
    out += ", " + duration_text(t.summed_seconds) + " summed over " + std::to_string(t.sessions) +
           " sessions";
  const auto list = [](const std::vector<std::string>& v, size_t most) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < most; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > most) s += " and " + std::to_string(v.size() - most) + " more";
    return s;
  };
  // One CPU, the one the About line names already: not again.
  const bool same_cpu = t.cpus.size() == 1 && meta.value("cpu", std::string()) == t.cpus[0];
  if (!t.cpus.empty() && !same_cpu)
    out += std::string("; CPU") + (t.cpus.size() > 1 ? "s: " : ": ") + list(t.cpus, 4);
  if (t.commits.size() > 1) out += "; commits: " + list(t.commits, 4);
  return out;
}

}  // namespace kvbench
