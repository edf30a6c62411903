#include "harness/report/per_task.h"

#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "harness/encode/markdown.h"
#include "harness/report/stats.h"

namespace kvbench {

using json = nlohmann::json;

namespace {

// A column: the task, and its requested context length when the run has
// the task at several (the needle grid's niah at 4k and 8k); -1 otherwise, and for a cell
// that names no length.
using Column = std::pair<std::string, int64_t>;

int64_t length_of(const json& cell) {
  const json& inst = cell["instance"];
  return inst.contains("length") && inst["length"].is_number_integer()
             ? inst["length"].get<int64_t>()
             : -1;
}

}  // namespace

std::string per_task_markdown(const std::vector<json>& cells) {
  // configuration (table order) -> column -> [instances] scores. A row per
  // configuration, like the table above: a leaderboard has a hundred
  // configurations and a dozen tasks, so tasks as columns keep it readable.
  std::map<std::string, std::set<int64_t>> lengths;
  for (const auto& c : cells)
    if (const int64_t l = length_of(c); l >= 0)
      lengths[c["instance"]["task"].get<std::string>()].insert(l);
  std::map<std::pair<int, std::string>, std::map<Column, std::vector<double>>> acc;
  std::set<Column> columns;
  for (const auto& c : cells) {
    const std::pair<int, std::string> key{c["policy"].value("index", 0),
                                          c["policy"]["label"].get<std::string>()};
    const std::string task = c["instance"]["task"].get<std::string>();
    const Column col{task, lengths[task].size() > 1 ? length_of(c) : -1};
    acc[key][col].push_back(c["score"].get<double>());
    columns.insert(col);
  }
  std::ostringstream o;
  o << "| Configuration |";
  for (const auto& [task, length] : columns)
    o << " " << markdown_cell(length < 0 ? task : task + " at " + std::to_string(length)) << " |";
  o << "\n|---|";
  for (size_t i = 0; i < columns.size(); ++i) o << "---:|";
  o << "\n";
  for (const auto& [key, by] : acc) {
    o << "| " << markdown_cell(key.second) << " |";
    for (const Column& col : columns) {
      const auto it = by.find(col);
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
