#include "harness/report/per_task.h"

#include <map>
#include <sstream>
#include <utility>

#include "harness/encode/markdown.h"
#include "harness/report/stats.h"

namespace kvbench {

using json = nlohmann::json;

std::string per_task_markdown(const std::vector<json>& cells) {
  // configuration (table order) -> task -> [instances] scores. A row per
  // configuration, like the table above: a leaderboard has a hundred
  // configurations and a dozen tasks, so tasks as columns keep it readable.
  std::map<std::pair<int, std::string>, std::map<std::string, std::vector<double>>> acc;
  std::map<std::string, bool> tasks;
  for (const auto& c : cells) {
    const std::pair<int, std::string> key{c["policy"].value("index", 0),
                                          c["policy"]["label"].get<std::string>()};
    const std::string task = c["instance"]["task"].get<std::string>();
    acc[key][task].push_back(c["score"].get<double>());
    tasks[task] = true;
  }
  std::ostringstream o;
  o << "| Configuration |";
  for (const auto& [t, _] : tasks) o << " " << markdown_cell(t) << " |";
  o << "\n|---|";
  for (size_t i = 0; i < tasks.size(); ++i) o << "---:|";
  o << "\n";
  for (const auto& [key, by] : acc) {
    o << "| " << markdown_cell(key.second) << " |";
    for (const auto& [t, _] : tasks) {
      const auto it = by.find(t);
      if (it == by.end())
        o << " – |";
      else {
        const stats::Estimate e = stats::estimate_mean(it->second);
        o << " " << stats::format_estimate(e.mean, e.ci) << " "
          << (e.kind == stats::ScoreKind::PassFail ? "W" : "B") << " n=" << e.n << " |";
      }
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace kvbench
