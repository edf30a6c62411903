#include "harness/report/compare_metrics.h"

#include "harness/report/stats.h"

namespace kvbench {
namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

}  // namespace

const char* metric_status(const MetricCheck& c) {
  if (!c.changed) return "unchanged";
  if (c.regressed) return "REGRESSED";
  if (c.worsening < 0) return "better";
  return stats::significant(c.p) ? "worse within tolerance" : "worse, not significant";
}

std::vector<MetricCheck> compare_metrics(const std::vector<CellMetrics>& base,
                                         const std::vector<CellMetrics>& next, double tolerance) {
  struct Metric {
    const char* name;
    double CellMetrics::*field;
    double sign;  // +1: higher is better; -1: lower is better
  };
  static constexpr Metric kMetrics[] = {{"answer NLL", &CellMetrics::answer_nll, -1.0},
                                        {"KL(full‖policy)", &CellMetrics::kl_full, -1.0},
                                        {"top-1 agreement", &CellMetrics::top1_agreement, 1.0}};
  std::vector<MetricCheck> out;
  for (const Metric& m : kMetrics) {
    // [n] oriented values (higher is better) of the instances both runs have.
    std::vector<double> a, b, raw_a, raw_b;
    for (size_t i = 0; i < base.size() && i < next.size(); ++i) {
      const double x = base[i].*m.field, y = next[i].*m.field;
      if (std::isnan(x) || std::isnan(y)) continue;
      raw_a.push_back(x);
      raw_b.push_back(y);
      a.push_back(m.sign * x);
      b.push_back(m.sign * y);
    }
    if (a.empty()) continue;
    MetricCheck c;
    c.metric = m.name;
    c.n = static_cast<int64_t>(a.size());
    c.base_mean = mean_of(raw_a);
    c.new_mean = mean_of(raw_b);
    c.worsening = mean_of(a) - mean_of(b);
    c.changed = a != b;
    c.p = c.changed ? stats::paired_p(stats::ScoreKind::Fractional, a, b) : 1.0;
    c.regressed = c.worsening > tolerance + 1e-12 && stats::significant(c.p);
    out.push_back(c);
  }
  return out;
}

}  // namespace kvbench
