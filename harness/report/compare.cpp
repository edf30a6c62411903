#include "harness/report/compare.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "harness/run/run_folder.h"

namespace kvbench {

using json = nlohmann::json;

CompareResult compare_runs(const std::string& base_dir, const std::string& new_dir,
                           double tolerance) {
  const RunFolder base = RunFolder::open(base_dir), next = RunFolder::open(new_dir);
  std::map<std::string, json> base_cells, new_cells;
  for (auto& c : base.cells()) base_cells[c["id"].get<std::string>()] = c;
  for (auto& c : next.cells()) new_cells[c["id"].get<std::string>()] = c;

  CompareResult r;
  std::ostringstream o;
  char buf[512];
  // Per (configuration, task) means over the cells both runs have.
  struct Acc {
    double base = 0, next = 0;
    int n = 0, missing = 0;
  };
  std::map<std::pair<std::string, std::string>, Acc> groups;
  std::ostringstream changed;
  int n_changed = 0, n_missing = 0;
  for (const auto& [id, b] : base_cells) {
    const std::pair<std::string, std::string> key{b["policy"]["label"].get<std::string>(),
                                                  b["instance"]["task"].get<std::string>()};
    Acc& a = groups[key];
    const auto it = new_cells.find(id);
    if (it == new_cells.end()) {
      ++a.missing;
      ++n_missing;
      continue;
    }
    const double sb = b["score"].get<double>(), sn = it->second["score"].get<double>();
    a.base += sb;
    a.next += sn;
    ++a.n;
    if (sb != sn) {
      ++n_changed;
      std::snprintf(buf, sizeof buf, "| %s | %s | %s | %.3f | %.3f | %+.3f |\n", id.c_str(),
                    b["instance"]["id"].get<std::string>().c_str(), key.first.c_str(), sb, sn,
                    sn - sb);
      changed << buf;
    }
  }
  o << "## Per configuration and task (tolerance " << tolerance << ")\n\n"
    << "| Configuration | Task | Cells | Base score | New score | Δ | Status "
       "|\n|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& [key, a] : groups) {
    const double mb = a.n ? a.base / a.n : NAN, mn = a.n ? a.next / a.n : NAN;
    const bool drop = a.n && (mb - mn) > tolerance + 1e-12;
    const bool fail = drop || a.missing > 0;
    r.regressed = r.regressed || fail;
    std::string status = drop ? "REGRESSED" : "ok";
    if (a.missing)
      status = (drop ? "REGRESSED, " : "") + std::to_string(a.missing) + " cell(s) missing";
    std::snprintf(buf, sizeof buf, "| %s | %s | %d | %.3f | %.3f | %+.3f | %s |\n",
                  key.first.c_str(), key.second.c_str(), a.n, mb, mn, mn - mb, status.c_str());
    o << buf;
  }
  o << "\n## Cells whose score changed (" << n_changed << ")\n\n";
  if (n_changed)
    o << "| Cell | Instance | Configuration | Base | New | Δ |\n|---|---|---|---:|---:|---:|\n"
      << changed.str();
  int n_new = 0;
  for (const auto& [id, c] : new_cells) n_new += base_cells.count(id) ? 0 : 1;
  o << "\n"
    << base_cells.size() << " base cells, " << new_cells.size() << " new cells, " << n_missing
    << " missing from new, " << n_new << " only in new.\n"
    << (r.regressed ? "RESULT: regression\n" : "RESULT: no regression\n");
  r.report = o.str();
  return r;
}

}  // namespace kvbench
