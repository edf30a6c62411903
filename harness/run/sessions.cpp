#include "harness/run/sessions.h"

#include <algorithm>
#include <utility>

#include "harness/time_text.h"
#include "model/common/error.h"

namespace kvbench {

nlohmann::json new_session(const nlohmann::json& m) {
  nlohmann::json s = {{"started_utc", m.value("started_utc", std::string())},
                      {"seconds", 0.0},
                      {"cells", 0},
                      {"cpu", m.value("cpu", std::string())},
                      {"git_commit", m.value("git_commit", std::string())},
                      {"threads", m.value("threads", 0)}};
  if (m.value("git_dirty", false)) s["git_dirty"] = true;
  return s;
}

void check_sessions(const nlohmann::json& meta, const std::string& file) {
  if (!meta.contains("sessions")) return;
  const nlohmann::json& list = meta["sessions"];
  const auto bad = [&](const std::string& field, const std::string& what) {
    throw InputError(file + ": " + field + ": expected " + what);
  };
  if (!list.is_array() || list.size() > kMaxSessions)
    bad("/sessions", "an array of at most " + std::to_string(kMaxSessions) + " sessions");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "/sessions/" + std::to_string(i);
    const nlohmann::json& s = list[i];
    if (!s.is_object()) bad(at, "an object");
    if (!s.contains("started_utc") || !s["started_utc"].is_string() ||
        !parse_utc(s["started_utc"].get<std::string>()))
      bad(at + "/started_utc", "a time as YYYY-MM-DDTHH:MM:SSZ");
    if (!s.contains("seconds") || !s["seconds"].is_number() ||
        !(s["seconds"].get<double>() >= 0 && s["seconds"].get<double>() <= 1e9))
      bad(at + "/seconds", "a number of seconds from 0 to 1e9");
    if (!s.contains("cells") || !s["cells"].is_number_integer() || s["cells"].get<int64_t>() < 0 ||
        s["cells"].get<int64_t>() > int64_t{1000000000000})
      bad(at + "/cells", "a count from 0 to 1e12");
    for (const char* k : {"cpu", "git_commit"})
      if (s.contains(k) && (!s[k].is_string() || s[k].get<std::string>().size() > 256))
        bad(at + "/" + k, "a string of at most 256 bytes");
    for (const char* k : {"threads", "shard"})
      if (s.contains(k) &&
          (!s[k].is_number_integer() || s[k].get<int64_t>() < 0 || s[k].get<int64_t>() > 1000000))
        bad(at + "/" + k, "a count from 0 to 1e6");
    if (s.contains("git_dirty") && !s["git_dirty"].is_boolean())
      bad(at + "/git_dirty", "true or false");
  }
}

SessionTime session_time(const nlohmann::json& sessions) {
  SessionTime r;
  std::vector<std::pair<double, double>> spans;  // [start, end) in seconds since the epoch
  const auto add_unique = [](std::vector<std::string>& to, const std::string& v) {
    if (!v.empty() && std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
  };
  for (const auto& s : sessions) {
    const auto start = parse_utc(s.value("started_utc", std::string()));
    const double seconds = s.value("seconds", 0.0);
    ++r.sessions;
    r.summed_seconds += seconds;
    if (start) spans.emplace_back(static_cast<double>(*start), *start + seconds);
    add_unique(r.cpus, s.value("cpu", std::string()));
    add_unique(r.commits, s.value("git_commit", std::string()));
  }
  // The union: sorted by start, overlapping spans joined (shards that ran side
  // by side count once).
  std::sort(spans.begin(), spans.end());
  double end = -1;
  for (const auto& [a, b] : spans) {
    if (a >= end) {
      r.wall_seconds += b - a;
      end = b;
    } else if (b > end) {
      r.wall_seconds += b - end;
      end = b;
    }
  }
  return r;
}

}  // namespace kvbench
