#include "harness/run/machines.h"

#include <algorithm>
#include <tuple>

#include "model/common/error.h"

namespace kvbench {

namespace {

// An entry's identity: CPU, commit, built with uncommitted changes.
using Key = std::tuple<std::string, std::string, bool>;

Key key_of(const nlohmann::json& m) {
  return {m.value("cpu", std::string()), m.value("git_commit", std::string()),
          m.value("git_dirty", false)};
}

// Inclusive ranges, sorted and joined where they touch or overlap:
// {[7,7],[1,2],[3,3]} -> [[1,3],[7,7]].
nlohmann::json ranges_of(std::vector<std::pair<int64_t, int64_t>> v) {
  std::sort(v.begin(), v.end());
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < v.size();) {
    int64_t first = v[i].first, last = v[i].second;
    size_t j = i + 1;
    for (; j < v.size() && v[j].first <= last + 1; ++j) last = std::max(last, v[j].second);
    out.push_back({first, last});
    i = j;
  }
  return out;
}

}  // namespace

nlohmann::json machines_of(const std::vector<nlohmann::json>& metas) {
  struct Group {
    Key key;
    nlohmann::json source;  // the first entry of the group
    std::vector<std::pair<int64_t, int64_t>> shards;
    int64_t runs = 0;
  };
  std::vector<Group> groups;
  const auto group_of = [&](const nlohmann::json& m) -> Group& {
    const Key k = key_of(m);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.key == k; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{k, m, {}, 0});
    return *it;
  };
  for (const auto& m : metas) {
    // A folder merged before keeps its own list (RunFolder::meta() checked it).
    if (m.contains("machines")) {
      for (nlohmann::json e : m["machines"]) {
        // Fields said once on top (shared by all its machines) belong to each.
        for (const char* k : {"cpu", "git_commit", "git_dirty"})
          if (!e.contains(k) && m.contains(k)) e[k] = m[k];
        Group& g = group_of(e);
        if (e.contains("shards"))
          for (const auto& p : e["shards"])
            g.shards.emplace_back(p[0].get<int64_t>(), p[1].get<int64_t>());
        g.runs += e.value("runs", int64_t{0});
      }
      continue;
    }
    Group& g = group_of(m);
    // kvbench merge checked the shard fields (check_split) before this.
    if (m.contains("shard") && m["shard"].is_object() && m["shard"].contains("index") &&
        m["shard"]["index"].is_number_integer()) {
      const int64_t i = m["shard"]["index"].get<int64_t>();
      g.shards.emplace_back(i, i);
    } else {
      ++g.runs;
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (const Group& g : groups) {
    nlohmann::json e = nlohmann::json::object();
    for (const char* k : {"cpu", "git_commit", "git_dirty"})
      if (g.source.contains(k)) e[k] = g.source[k];
    if (!g.shards.empty()) e["shards"] = ranges_of(g.shards);
    if (g.runs) e["runs"] = std::min<int64_t>(g.runs, 1000000);
    out.push_back(e);
  }
  return out;
}

void check_machines(const nlohmann::json& list, const std::string& file, const std::string& at) {
  const auto bad = [&](const std::string& field, const std::string& what) {
    throw InputError(file + ": " + field + ": expected " + what);
  };
  if (!list.is_array() || list.empty() || list.size() > kMaxMachines)
    bad(at, "an array of 1 to " + std::to_string(kMaxMachines) + " machines");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string here = at + "/" + std::to_string(i);
    const nlohmann::json& e = list[i];
    if (!e.is_object()) bad(here, "an object");
    for (const char* k : {"cpu", "git_commit"})
      if (e.contains(k) && (!e[k].is_string() || e[k].get<std::string>().size() > 256))
        bad(here + "/" + k, "a string of at most 256 bytes");
    if (e.contains("git_dirty") && !e["git_dirty"].is_boolean())
      bad(here + "/git_dirty", "true or false");
    if (e.contains("runs") && (!e["runs"].is_number_integer() || e["runs"].get<int64_t>() < 1 ||
                               e["runs"].get<int64_t>() > 1000000))
      bad(here + "/runs", "a count from 1 to 1e6");
    if (!e.contains("shards")) {
      if (!e.contains("runs")) bad(here, "\"shards\" or \"runs\"");
      continue;
    }
    const nlohmann::json& s = e["shards"];
    if (!s.is_array() || s.empty() || s.size() > kMaxShardRanges)
      bad(here + "/shards", "an array of 1 to " + std::to_string(kMaxShardRanges) + " ranges");
    int64_t last = 0;
    for (size_t r = 0; r < s.size(); ++r) {
      const nlohmann::json& p = s[r];
      const bool ok = p.is_array() && p.size() == 2 && p[0].is_number_integer() &&
                      p[1].is_number_integer() && p[0].get<int64_t>() > last &&
                      p[0].get<int64_t>() <= p[1].get<int64_t>() && p[1].get<int64_t>() <= 1000000;
      if (!ok)
        bad(here + "/shards/" + std::to_string(r),
            "[first, last]: shard indexes from 1 to 1e6, in order, not overlapping");
      last = p[1].get<int64_t>();
    }
  }
}

std::string machines_text(const nlohmann::json& list) {
  std::string out;
  for (const auto& e : list) {
    const std::string cpu = e.value("cpu", std::string());
    out += (out.empty() ? "" : "; ") + (cpu.empty() ? std::string("unknown CPU") : cpu);
    if (e.contains("git_commit"))
      out += ", kvbench commit " + e["git_commit"].get<std::string>() +
             (e.value("git_dirty", false) ? " (built with uncommitted changes)" : "");
    std::string where;
    if (e.contains("shards")) {
      int64_t n = 0;
      for (const auto& p : e["shards"]) {
        const int64_t a = p[0].get<int64_t>(), b = p[1].get<int64_t>();
        where += (where.empty() ? "" : ", ") + std::to_string(a) +
                 (b > a ? "–" + std::to_string(b) : std::string());
        n += b - a + 1;
      }
      where = (n == 1 ? "shard " : "shards ") + where;
    }
    if (e.contains("runs")) {
      const int64_t r = e["runs"].get<int64_t>();
      where += (where.empty() ? "" : " and ") + std::to_string(r) +
               (r == 1 ? " unsharded run" : " unsharded runs");
    }
    out += ": " + where;
  }
  return out;
}

}  // namespace kvbench
