#include "harness/report/compare_resources.h"

#include <algorithm>

namespace kvbench {
namespace {

// A cell's decode speed over its run's full cache's; NaN without both.
double relative_speed(const CellResources& c) {
  return c.decode_tok_s > 0 && c.full_decode_tok_s > 0 ? c.decode_tok_s / c.full_decode_tok_s : NAN;
}

}  // namespace

ResourceCheck compare_resources(const std::vector<CellResources>& base,
                                const std::vector<CellResources>& next) {
  ResourceCheck r;
  r.n = static_cast<int64_t>(std::min(base.size(), next.size()));
  double hb = 0, hn = 0;
  int64_t bytes = 0;
  std::vector<double> sb, sn, change;
  for (int64_t i = 0; i < r.n; ++i) {
    if (!std::isnan(base[i].hot_bytes) && !std::isnan(next[i].hot_bytes)) {
      hb += base[i].hot_bytes;
      hn += next[i].hot_bytes;
      ++bytes;
    }
    const double b = relative_speed(base[i]), n = relative_speed(next[i]);
    if (std::isnan(b) || std::isnan(n)) continue;
    sb.push_back(b);
    sn.push_back(n);
    change.push_back(n / b);
  }
  if (bytes) {
    r.base_hot = hb / static_cast<double>(bytes);
    r.new_hot = hn / static_cast<double>(bytes);
  }
  r.speed_n = static_cast<int64_t>(change.size());
  r.base_speed = stats::median(sb);
  r.new_speed = stats::median(sn);
  r.speed_change = stats::median(change);
  r.speed_change_ci = stats::bootstrap_median_interval(change);
  return r;
}

}  // namespace kvbench
