#include "harness/report/versus.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "harness/encode/json_number.h"
#include "harness/encode/markdown.h"
#include "harness/report/curve_stats.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench {

using json = nlohmann::json;

namespace {

// A side of the comparison: a family's configurations by ratio, or one
// configuration (at its ratio, NaN when it has none).
struct Side {
  bool family = false;
  std::map<double, int64_t> by_ratio;  // family: ratio -> configuration index
  int64_t index = -1;                  // configuration
  double ratio = NAN;
};

struct Catalog {
  std::map<std::string, std::map<double, int64_t>> families;
  std::map<std::string, int64_t> labels;
  std::map<int64_t, std::string> label_of;
  std::map<int64_t, double> ratio_of;
};

Catalog catalog(const std::vector<json>& cells) {
  Catalog c;
  for (const json& cell : cells) {
    const json& p = cell["policy"];
    const int64_t index = p.value("index", int64_t{0});
    const std::string label = p.value("label", std::string("?"));
    c.labels.emplace(label, index);
    c.label_of.emplace(index, label);
    if (const auto r = ratio_point(cell)) {
      c.families[r->family].emplace(r->ratio, index);
      c.ratio_of.emplace(index, r->ratio);
    }
  }
  return c;
}

std::string quoted(const std::string& s) { return "'" + escaped_text(s, 200) + "'"; }

Side resolve(const Catalog& c, const std::string& name) {
  Side s;
  if (const auto f = c.families.find(name); f != c.families.end()) {
    s.family = true;
    s.by_ratio = f->second;
    return s;
  }
  if (const auto l = c.labels.find(name); l != c.labels.end()) {
    s.index = l->second;
    if (const auto r = c.ratio_of.find(s.index); r != c.ratio_of.end()) s.ratio = r->second;
    return s;
  }
  std::string families;
  int listed = 0;
  for (const auto& [f, r] : c.families)
    if (listed++ < 12) families += (families.empty() ? "" : ", ") + quoted(f);
  if (listed > 12) families += " and " + std::to_string(listed - 12) + " more";
  throw InputError("--versus: " + quoted(name) +
                   " is neither a policy family nor a configuration label of the run's cells" +
                   (families.empty() ? std::string(" (it has no ratio families)")
                                     : " (families: " + families + ")"));
}

// A cell's number at cell[group][key] (group null: cell[key]); NaN when it
// is missing or not a number (null: the cell has no such measure).
double number_or_nan(const json& cell, const char* group, const char* key) {
  const json* g = &cell;
  if (group) {
    if (!cell.contains(group) || !cell[group].is_object()) return NAN;
    g = &cell[group];
  }
  return g->contains(key) && (*g)[key].is_number() ? (*g)[key].get<double>() : NAN;
}

double mean_of(const std::vector<std::pair<const json*, const json*>>& pairs, bool first,
               const char* group, const char* key) {
  double sum = 0;
  int64_t n = 0;
  for (const auto& [a, b] : pairs)
    if (const double x = number_or_nan(first ? *a : *b, group, key); std::isfinite(x)) {
      sum += x;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : NAN;
}

// The paired differences a - b of one measure over the instances where both
// cells have it.
stats::PairedDifference paired(const std::vector<std::pair<const json*, const json*>>& pairs,
                               const char* group, const char* key) {
  std::vector<double> d;
  for (const auto& [a, b] : pairs) {
    const double x = number_or_nan(*a, group, key), y = number_or_nan(*b, group, key);
    if (std::isfinite(x) && std::isfinite(y)) d.push_back(x - y);
  }
  return stats::paired_difference(d);
}

VersusPoint compare_point(const std::map<int64_t, std::map<std::string, const json*>>& cells_of,
                          const Catalog& c, int64_t a, int64_t b, double ratio) {
  VersusPoint pt;
  pt.ratio = ratio;
  pt.a_label = c.label_of.at(a);
  pt.b_label = c.label_of.at(b);
  std::vector<std::pair<const json*, const json*>> pairs;
  const auto& as = cells_of.at(a);
  const auto& bs = cells_of.at(b);
  for (const auto& [inst, cell] : as)
    if (const auto it = bs.find(inst); it != bs.end()) pairs.emplace_back(cell, it->second);
  pt.n = static_cast<int64_t>(pairs.size());
  if (pairs.empty()) return pt;
  pt.a_score = mean_of(pairs, true, nullptr, "score");
  pt.b_score = mean_of(pairs, false, nullptr, "score");
  const double ma = mean_of(pairs, true, "memory", "kv_bytes_hot"),
               mb = mean_of(pairs, false, "memory", "kv_bytes_hot");
  if (mb > 0) pt.memory = ma / mb;
  pt.score = paired(pairs, nullptr, "score");
  pt.answer_nll = paired(pairs, "retention", "answer_nll");
  pt.kl_full = paired(pairs, "retention", "kl_full");
  pt.top1 = paired(pairs, "retention", "top1_agreement");
  return pt;
}

}  // namespace

bool versus_names(const std::vector<json>& cells, const std::string& name) {
  const Catalog c = catalog(cells);
  return c.families.count(name) > 0 || c.labels.count(name) > 0;
}

Versus compare_versus(const std::vector<json>& cells, const std::string& a, const std::string& b) {
  const Catalog c = catalog(cells);
  const Side sa = resolve(c, a), sb = resolve(c, b);
  // configuration index -> instance id -> its cell
  std::map<int64_t, std::map<std::string, const json*>> cells_of;
  for (const json& cell : cells)
    cells_of[cell["policy"].value("index", int64_t{0})][cell["instance"].value("id", "")] = &cell;

  Versus v;
  v.a = a;
  v.b = b;
  if (sa.family && sb.family) {
    for (const auto& [x, ia] : sa.by_ratio)
      if (const auto it = sb.by_ratio.find(x); it != sb.by_ratio.end()) {
        v.points.push_back(compare_point(cells_of, c, ia, it->second, x));
        v.auc_ratios.push_back(x);
      }
  } else if (sa.family) {
    for (const auto& [x, ia] : sa.by_ratio)
      v.points.push_back(compare_point(cells_of, c, ia, sb.index, x));
  } else if (sb.family) {
    for (const auto& [x, ib] : sb.by_ratio)
      v.points.push_back(compare_point(cells_of, c, sa.index, ib, x));
  } else {
    v.points.push_back(
        compare_point(cells_of, c, sa.index, sb.index, std::isnan(sa.ratio) ? sb.ratio : sa.ratio));
  }
  if (v.points.empty())
    throw InputError("--versus: " + quoted(a) + " and " + quoted(b) +
                     " have no compression ratio in common");
  if (v.auc_ratios.size() >= 2) {
    // Each family's curve over the common ratios only, so the two areas
    // cover the same range.
    std::vector<json> common;
    for (const json& cell : cells)
      if (const auto r = ratio_point(cell);
          r && (r->family == a || r->family == b) &&
          std::binary_search(v.auc_ratios.begin(), v.auc_ratios.end(), r->ratio))
        common.push_back(cell);
    const std::vector<CurveFamily> fams = curve_families(common);
    const auto find = [&](const std::string& f) {
      return std::find_if(fams.begin(), fams.end(),
                          [&](const CurveFamily& x) { return x.family == f; });
    };
    if (const auto fa = find(a), fb = find(b); fa != fams.end() && fb != fams.end()) {
      v.a_auc = fa->auc;
      v.b_auc = fb->auc;
      v.a_auc_ci = fa->ci;
      v.b_auc_ci = fb->ci;
      v.auc = compare_curves(*fa, *fb);
    }
  } else {
    v.auc_ratios.clear();
  }
  return v;
}

namespace {

std::string verdict(const stats::PairedDifference& d, const std::string& a) {
  if (d.n == 0) return "–";
  if (d.differ) return markdown_text(a) + (d.delta > 0 ? " higher" : " lower");
  if (d.split) return "unsettled at n=" + std::to_string(d.n);
  return "not distinguished at n=" + std::to_string(d.n);
}

std::string difference(const stats::PairedDifference& d, const char* format) {
  if (d.n == 0) return "–";
  const std::string p = stats::format_p(d.p);
  return stats::format_estimate(d.delta, d.ci, format) + " (p " +
         (p.rfind("≤", 0) == 0 ? "" : "= ") + p + ")";
}

}  // namespace

std::string versus_markdown(const Versus& v) {
  const std::string a = markdown_text(v.a, 200), b = markdown_text(v.b, 200);
  int64_t n_max = 0;
  for (const VersusPoint& p : v.points) n_max = std::max(n_max, p.n);
  std::ostringstream o;
  o << "**" << a << " against " << b << "**, paired over the same instances: each difference is "
    << a << " − " << b
    << " per instance, its mean with a 95% bootstrap interval over the instances and the "
       "two-sided sign-flip test on that mean (9,999 draws). A difference is called one when "
       "p < 0.05 and the interval excludes 0; 'not distinguished' means this run could not "
       "tell them apart, not that they are equal. ";
  if (const int64_t k = stats::sign_flip_min_flips(n_max); k > 0)
    o << "With n = " << n_max << " paired instances the smallest difference the test can call "
      << "is " << k << " instances moving the same way by the same amount ("
      << stats::format_estimate(static_cast<double>(k) / static_cast<double>(n_max), {}, "%.3f")
      << " of a pass/fail score).";
  else
    o << "With n = " << n_max << " paired instances no difference can be called (6 are needed).";
  o << "\n\n";
  if (!v.auc_ratios.empty()) {
    std::string ratios;
    for (double x : v.auc_ratios)
      ratios += (ratios.empty() ? "" : ", ") + stats::format_estimate(x, {}, "%.2g");
    o << "Area under the score-vs-ratio curve over the common ratios (" << ratios << "): " << a
      << " " << stats::format_estimate(v.a_auc, v.a_auc_ci) << ", " << b << " "
      << stats::format_estimate(v.b_auc, v.b_auc_ci) << "; difference "
      << difference(v.auc, "%+.3f") << ", n=" << v.auc.n << ": " << verdict(v.auc, v.a) << ".\n\n";
  }
  o << "| Ratio | " << a << " | " << b << " | n | Score " << a << " | Score " << b
    << " | Δ score | Verdict | Δ answer NLL (nats) | Δ KL(full‖·) | Δ top-1 agreement | "
       "KV memory "
    << a << " / " << b << " |\n|---:|---|---|---:|---:|---:|---|---|---|---|---|---:|\n";
  for (const VersusPoint& p : v.points) {
    o << "| " << (std::isnan(p.ratio) ? "–" : stats::format_estimate(p.ratio, {}, "%.2g")) << " | "
      << markdown_cell(p.a_label) << " | " << markdown_cell(p.b_label) << " | " << p.n << " | "
      << stats::format_estimate(p.a_score, {}) << " | " << stats::format_estimate(p.b_score, {})
      << " | " << difference(p.score, "%+.3f") << " | " << verdict(p.score, v.a) << " | "
      << difference(p.answer_nll, "%+.3f") << " | " << difference(p.kl_full, "%+.4f") << " | "
      << difference(p.top1, "%+.3f") << " | "
      << (std::isnan(p.memory) ? "–" : stats::format_estimate(p.memory, {}, "%.3f")) << " |\n";
  }
  return o.str();
}

namespace {

json interval(const stats::Interval& ci) {
  return json::array({json_number(ci.lo), json_number(ci.hi)});
}

json difference_json(const stats::PairedDifference& d) {
  return {{"n", d.n},
          {"delta", json_number(d.delta)},
          {"ci", interval(d.ci)},
          {"p", json_number(d.p)},
          {"differ", d.differ},
          {"split", d.split}};
}

json verdict_json(const stats::PairedDifference& d) {
  if (d.n == 0) return nullptr;
  if (d.differ) return d.delta > 0 ? "higher" : "lower";
  return d.split ? "unsettled" : "not distinguished";
}

}  // namespace

json versus_json(const Versus& v) {
  int64_t n_max = 0;
  for (const VersusPoint& p : v.points) n_max = std::max(n_max, p.n);
  json points = json::array();
  for (const VersusPoint& p : v.points)
    points.push_back({{"ratio", json_number(p.ratio)},
                      {"a_label", p.a_label},
                      {"b_label", p.b_label},
                      {"n", p.n},
                      {"a_score", json_number(p.a_score)},
                      {"b_score", json_number(p.b_score)},
                      {"memory_ratio", json_number(p.memory)},
                      {"score", difference_json(p.score)},
                      {"answer_nll", difference_json(p.answer_nll)},
                      {"kl_full", difference_json(p.kl_full)},
                      {"top1_agreement", difference_json(p.top1)},
                      {"verdict", verdict_json(p.score)}});
  json auc = nullptr;
  if (!v.auc_ratios.empty())
    auc = {{"ratios", v.auc_ratios},
           {"a", {{"mean", json_number(v.a_auc)}, {"ci", interval(v.a_auc_ci)}}},
           {"b", {{"mean", json_number(v.b_auc)}, {"ci", interval(v.b_auc_ci)}}},
           {"difference", difference_json(v.auc)},
           {"verdict", verdict_json(v.auc)}};
  return {{"a", v.a},   {"b", v.b},
          {"n", n_max}, {"min_detectable_flips", stats::sign_flip_min_flips(n_max)},
          {"auc", auc}, {"points", points}};
}

}  // namespace kvbench
