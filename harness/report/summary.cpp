#include "harness/report/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "harness/report/stats.h"

namespace kvbench {
namespace {

using json = nlohmann::json;

// A memory share in percent with three significant digits ("3.91%", "25%",
// "100%"): enough to tell apart the nearby memories the front walks through.
std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", share * 100);
  return buf;
}

std::string p_text(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", p);
  return buf;
}

// "a", "a and b", "a, b and c" (with sep "; ": "a; b and c")
std::string join(const std::vector<std::string>& parts, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : sep) + parts[i];
  return out;
}

std::string estimate(const TableRow& r) {
  return stats::format_estimate(r.score, r.score_ci) + " (n=" + std::to_string(r.cells) + ")";
}

// One configuration's scores by instance id.
using Scores = std::map<std::string, double>;

// A paired comparison of `next` against `base` on the instances both have.
struct Paired {
  int64_t n = 0;
  double base_mean = NAN, next_mean = NAN;
  double p = 1.0;
  stats::ScoreKind kind = stats::ScoreKind::PassFail;
};

Paired paired(const Scores& base, const Scores& next) {
  std::vector<double> b, x, both;
  for (const auto& [id, s] : base)
    if (const auto it = next.find(id); it != next.end()) {
      b.push_back(s);
      x.push_back(it->second);
    }
  Paired out;
  out.n = static_cast<int64_t>(b.size());
  if (b.empty()) return out;
  both = b;
  both.insert(both.end(), x.begin(), x.end());
  out.kind = stats::score_kind(both);
  double sb = 0, sx = 0;
  for (size_t i = 0; i < b.size(); ++i) sb += b[i], sx += x[i];
  out.base_mean = sb / static_cast<double>(b.size());
  out.next_mean = sx / static_cast<double>(b.size());
  // The paired tests are one-sided (stats.h): p asks whether the score moved
  // the way the means did, down (a drop) or up (the test with the runs
  // swapped).
  out.p = out.next_mean < out.base_mean ? stats::paired_p(out.kind, b, x)
                                        : stats::paired_p(out.kind, x, b);
  return out;
}

std::string test_text(const Paired& c) {
  return std::string(stats::paired_test_name(c.kind)) + " p = " + p_text(c.p);
}

}  // namespace

std::vector<std::string> summary_sentences(const std::vector<json>& cells,
                                           const std::vector<TableRow>& rows) {
  std::vector<std::string> out;
  if (rows.empty()) return out;
  std::map<std::string, Scores> scores;  // label -> instance -> score
  std::string reference;
  for (const auto& c : cells) {
    const std::string label = c["policy"]["label"].get<std::string>();
    scores[label][c["instance"]["id"].get<std::string>()] = c["score"].get<double>();
    if (reference.empty() && c["policy"].value("is_reference", false)) reference = label;
  }
  const TableRow* full = nullptr;
  for (const auto& r : rows)
    if (r.label == reference) full = &r;

  if (!full) {
    // No reference: memory and retention have nothing to be relative to.
    const auto best = std::max_element(
        rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.score < b.score; });
    out.push_back(
        "The run has no full-cache cells, so memory and retention have no reference; the "
        "highest mean score is " +
        best->label + "'s, " + estimate(*best) + ".");
    return out;
  }
  out.push_back("The full cache (" + full->label + ") scores " + estimate(*full) + ", " +
                full->score_method() + " 95% interval, all tasks pooled.");

  // What keeps most at which memory: the Pareto front, lowest memory first.
  // A configuration is on it when no configuration with at most its memory
  // scores as high; equal scores at equal memory share a point.
  std::vector<const TableRow*> by_memory;
  for (const auto& r : rows)
    if (r.memory_rel) by_memory.push_back(&r);
  std::stable_sort(by_memory.begin(), by_memory.end(), [](const TableRow* a, const TableRow* b) {
    return *a->memory_rel != *b->memory_rel ? *a->memory_rel < *b->memory_rel : a->score > b->score;
  });
  std::vector<std::string> front;
  double best = -1;
  for (size_t i = 0; i < by_memory.size(); ++i) {
    const TableRow& r = *by_memory[i];
    if (!(r.score > best)) continue;
    best = r.score;
    std::vector<std::string> names = {r.label};
    std::vector<const TableRow*> tied = {&r};
    for (size_t j = i + 1; j < by_memory.size(); ++j)
      if (*by_memory[j]->memory_rel == *r.memory_rel && by_memory[j]->score == r.score) {
        names.push_back(by_memory[j]->label);
        tied.push_back(by_memory[j]);
      }
    std::string point = "at " + percent(*r.memory_rel) + " of the full cache's memory or less, " +
                        join(names) + ": " + estimate(r);
    // The runner-up: the best other configuration that needs no more memory.
    const TableRow* runner = nullptr;
    for (const TableRow* o : by_memory)
      if (*o->memory_rel <= *r.memory_rel && std::find(tied.begin(), tied.end(), o) == tied.end() &&
          (!runner || o->score > runner->score))
        runner = o;
    if (runner) {
      const Paired c = paired(scores[runner->label], scores[r.label]);
      if (c.n > 0)
        point += std::string(stats::significant(c.p) ? ", significantly above "
                                                     : ", not significantly above ") +
                 runner->label + "'s " + stats::format_estimate(runner->score, {}) + " (" +
                 test_text(c) + ")";
    }
    front.push_back(point);
  }
  if (!front.empty())
    out.push_back(
        "What keeps the most at each memory (the Pareto front of score against KV "
        "memory): " +
        join(front, "; ") + ".");

  // Each configuration against the full cache on the same instances.
  struct Versus {
    const TableRow* row;
    Paired c;
  };
  std::vector<Versus> same, below, above;
  for (const TableRow* r : by_memory) {
    if (r == full) continue;
    const Paired c = paired(scores[full->label], scores[r->label]);
    if (c.n == 0) continue;
    if (!stats::significant(c.p))
      same.push_back({r, c});
    else
      (c.next_mean < c.base_mean ? below : above).push_back({r, c});
  }
  // A sentence names at most kListed configurations (the least memory
  // first); a leaderboard's hundred would bury the summary.
  constexpr size_t kListed = 8;
  const auto more = [](size_t shown, size_t all) {
    return all > shown ? " and " + std::to_string(all - shown) + " more (the table lists each)"
                       : std::string();
  };
  const auto listing = [&](const std::vector<Versus>& v) {
    std::vector<std::string> parts;
    for (const auto& [r, c] : v) {
      if (parts.size() == kListed) break;
      parts.push_back(r->label + " at " + percent(*r->memory_rel) + " (" +
                      stats::format_estimate(r->score, r->score_ci) + ", " + test_text(c) + ")");
    }
    return join(parts, "; ") + more(parts.size(), v.size());
  };
  if (!below.empty())
    out.push_back("Significantly below the full cache on the same instances: " + listing(below) +
                  ".");
  if (!above.empty())
    out.push_back("Significantly above the full cache on the same instances: " + listing(above) +
                  ".");
  if (!same.empty()) {
    out.push_back(
        "Not significantly different from the full cache on the same instances (p >= "
        "0.05): " +
        listing(same) + ".");
    // A lower point estimate the test cannot call a drop: say how large a
    // drop this many instances could have shown, so "not significant" is not
    // read as "equal".
    const Versus* weakest = nullptr;
    for (const auto& v : same)
      if (v.c.next_mean < v.c.base_mean && (!weakest || v.c.n < weakest->c.n)) weakest = &v;
    if (weakest) {
      const int64_t n = weakest->c.n;
      const int64_t k = stats::min_detectable_flips(weakest->c.kind, n);
      const std::string test = stats::paired_test_name(weakest->c.kind);
      out.push_back(
          k == 0 ? "With " + std::to_string(n) + " paired instances the " + test +
                       " test can call no drop significant at p < 0.05, so the configurations "
                       "above that score lower than the full cache may still have lost to it."
                 : "With " + std::to_string(n) + " paired instances the one-sided " + test +
                       " test calls a drop significant only from " + std::to_string(k) + " of " +
                       std::to_string(n) + " instances lost and none gained (" +
                       percent(static_cast<double>(k) / static_cast<double>(n)) +
                       "), so the lower scores above are not shown to be equal to the full "
                       "cache's either.");
    }
    // The least memory at which the score holds, as far as this run can
    // tell: said only when its test could have called some drop (with 2
    // instances none can be: not losing is then no evidence of holding),
    // with the smallest drop it could have seen.
    const Versus& least = same.front();  // by_memory order
    const int64_t k = stats::min_detectable_flips(least.c.kind, least.c.n);
    if (*least.row->memory_rel < 1.0 && k > 0)
      out.push_back("The least memory not significantly below the full cache: " + least.row->label +
                    " at " + percent(*least.row->memory_rel) + " (its " +
                    std::to_string(least.c.n) + " paired instances could show a drop of " +
                    std::to_string(k) + " of " + std::to_string(least.c.n) +
                    " instances or more, no smaller one).");
  }
  // Collapse: even the optimistic end of the interval keeps less than half
  // of the full cache's score.
  std::vector<std::string> collapsed;
  size_t n_collapsed = 0;
  for (const TableRow* r : by_memory)
    if (r != full && full->score > 0 && !std::isnan(r->score_ci.hi) &&
        r->score_ci.hi < 0.5 * full->score && ++n_collapsed <= kListed)
      collapsed.push_back(r->label + " at " + percent(*r->memory_rel));
  if (!collapsed.empty())
    out.push_back(
        "Collapsed (the 95% interval's upper end is below half the full cache's score): " +
        join(collapsed) + more(collapsed.size(), n_collapsed) + ".");
  return out;
}

}  // namespace kvbench
