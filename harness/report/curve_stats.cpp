#include "harness/report/curve_stats.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "harness/encode/markdown.h"

namespace kvbench {

using json = nlohmann::json;

std::string policy_family(const std::string& label) {
  const size_t at = label.rfind(" (budget ");
  return at == std::string::npos || label.back() != ')' ? label : label.substr(0, at);
}

std::optional<RatioPoint> ratio_point(const json& cell) {
  const json& p = cell["policy"];
  if (p.value("is_reference", false) || !p.contains("budget") || !p["budget"].is_number())
    return std::nullopt;
  const double b = p["budget"].get<double>();
  if (!(b > 0 && b <= 1)) return std::nullopt;
  return RatioPoint{policy_family(p.value("label", std::string("?"))), 1.0 - b,
                    p.value("index", int64_t{0})};
}

std::vector<std::string> ratio_families(std::span<const std::vector<json>* const> runs) {
  std::map<std::string, int64_t> first;
  for (const std::vector<json>* cells : runs)
    for (const json& c : *cells)
      if (const auto r = ratio_point(c);
          r && (!first.count(r->family) || r->index < first[r->family]))
        first[r->family] = r->index;
  std::vector<std::string> out;
  for (const auto& [f, i] : first) out.push_back(f);
  std::stable_sort(out.begin(), out.end(),
                   [&](const auto& a, const auto& b) { return first[a] < first[b]; });
  return out;
}

std::vector<CurveFamily> curve_families(const std::vector<json>& cells) {
  // family -> instance -> ratio -> score
  std::map<std::string, std::map<std::string, std::map<double, double>>> scores;
  for (const json& c : cells)
    if (const auto r = ratio_point(c))
      scores[r->family][c["instance"].value("id", "")][r->ratio] = c["score"].get<double>();
  std::vector<CurveFamily> out;
  const std::vector<const std::vector<json>*> runs{&cells};
  for (const std::string& f : ratio_families(runs)) {
    const auto& by_instance = scores[f];
    std::set<double> ratios;
    for (const auto& [inst, by_ratio] : by_instance)
      for (const auto& [x, s] : by_ratio) ratios.insert(x);
    if (ratios.size() < 2) continue;
    CurveFamily fam;
    fam.family = f;
    fam.ratios.assign(ratios.begin(), ratios.end());
    const double span = fam.ratios.back() - fam.ratios.front();
    std::vector<double> aucs;
    for (const auto& [inst, by_ratio] : by_instance) {
      if (by_ratio.size() != ratios.size()) continue;  // not every ratio: left out
      double area = 0;
      for (auto it = std::next(by_ratio.begin()); it != by_ratio.end(); ++it) {
        const auto prev = std::prev(it);
        area += (it->first - prev->first) * (it->second + prev->second) / 2;
      }
      fam.auc_of[inst] = area / span;
      aucs.push_back(area / span);
    }
    if (aucs.empty()) continue;
    double sum = 0;
    for (double a : aucs) sum += a;
    fam.auc = sum / static_cast<double>(aucs.size());
    fam.ci = stats::bootstrap_mean_interval(aucs);
    out.push_back(std::move(fam));
  }
  return out;
}

CurvePair compare_curves(const CurveFamily& a, const CurveFamily& b) {
  std::vector<double> d;
  for (const auto& [inst, va] : a.auc_of)
    if (const auto it = b.auc_of.find(inst); it != b.auc_of.end()) d.push_back(va - it->second);
  return stats::paired_difference(d);
}

std::string curve_table_markdown(const std::vector<json>& cells) {
  std::vector<CurveFamily> fams = curve_families(cells);
  if (fams.empty()) return "";
  std::stable_sort(fams.begin(), fams.end(),
                   [](const CurveFamily& a, const CurveFamily& b) { return a.auc > b.auc; });
  const CurveFamily& leader = fams.front();
  std::ostringstream o;
  o << "| Rank | Family | Ratios | n | AUC | Δ vs " << markdown_cell(leader.family)
    << " | p | Verdict |\n|---:|---|---|---:|---:|---:|---:|---|\n";
  for (size_t i = 0; i < fams.size(); ++i) {
    const CurveFamily& f = fams[i];
    std::string ratios;
    for (double x : f.ratios)
      ratios += (ratios.empty() ? "" : ", ") + stats::format_estimate(x, {}, "%.2g");
    o << "| " << i + 1 << " | " << markdown_cell(f.family) << " | " << ratios << " | "
      << f.auc_of.size() << " | " << stats::format_estimate(f.auc, f.ci) << " | ";
    if (i == 0) {
      o << "– | – | leader |\n";
      continue;
    }
    const CurvePair c = compare_curves(f, leader);
    o << stats::format_estimate(c.delta, c.ci, "%+.3f") << " (n=" << c.n << ") | "
      << stats::format_p(c.p) << " | "
      << (c.differ  ? (c.delta < 0 ? "below the leader" : "above the leader")
          : c.split ? "unsettled at n=" + std::to_string(c.n) + " (interval and test disagree)"
                    : "not distinguished at n=" + std::to_string(c.n))
      << " |\n";
  }
  return o.str();
}

}  // namespace kvbench
