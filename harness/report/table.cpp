#include "harness/report/table.h"

#include "harness/encode/csv.h"
#include "harness/encode/markdown.h"
#include "harness/report/paired_ratio.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace kvbench {
namespace {

using json = nlohmann::json;

double num(const json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].contains(b) || !j[a][b].is_number()) return NAN;
  return j[a][b].get<double>();
}

double mean(const std::vector<double>& v) {
  double s = 0.0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) s += x, ++n;
  return n ? s / n : NAN;
}

// The smallest and largest non-NaN value; NaN for none.
stats::Interval range(const std::vector<double>& v) {
  stats::Interval r;
  for (double x : v)
    if (!std::isnan(x)) {
      r.lo = std::isnan(r.lo) ? x : std::min(r.lo, x);
      r.hi = std::isnan(r.hi) ? x : std::max(r.hi, x);
    }
  return r;
}

std::optional<double> opt(double x) {
  return std::isnan(x) ? std::nullopt : std::optional<double>(x);
}

std::string fmt(std::optional<double> v, const char* f) {
  if (!v) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, *v);
  return buf;
}

// Context Retention's 95% interval; s and f are the row's and the full
// cache's scores on the same instances ([instances], equal sizes). When the
// full cache scored the same c > 0 on every one (typically 1: it solved them
// all), retention is the row's mean / c, and its interval the row's score
// interval / c (Wilson for pass/fail), so the two columns agree. Otherwise,
// for pass/fail scores, the paired ratio's score interval (paired_ratio.h);
// for fractional ones a bootstrap over the instance pairs of the ratio of sums.
stats::Interval retention_interval(const std::vector<double>& s, const std::vector<double>& f) {
  if (f.empty()) return {};
  if (std::all_of(f.begin(), f.end(), [&](double x) { return x == f.front(); })) {
    if (f.front() <= 0) return {};
    const stats::Interval ci = stats::estimate_mean(s).ci;
    return {ci.lo / f.front(), ci.hi / f.front()};
  }
  // Pass/fail: the paired score interval, which never collapses to the
  // estimate (a bootstrap gives [0, 0] when the row failed every instance).
  if (stats::score_kind(s) == stats::ScoreKind::PassFail &&
      stats::score_kind(f) == stats::ScoreKind::PassFail)
    return stats::paired_ratio_interval(s, f);
  const stats::Interval b = stats::bootstrap_ratio_interval(s, f);
  // Every resample gives one ratio when the row scored 0 on every instance
  // while the full cache did not: a zero-width interval claims a certainty
  // n instances cannot give. Then the row's own score interval
  // (Wilson for its 0/1 scores) over the full cache's mean, as when the full
  // cache scored the same everywhere.
  if (!std::isnan(b.lo) && b.lo == b.hi && s != f) {
    double sum = 0;
    for (double x : f) sum += x;
    const double mean_f = sum / static_cast<double>(f.size());
    const stats::Interval ci = stats::estimate_mean(s).ci;
    if (mean_f > 0 && !std::isnan(ci.lo)) return {ci.lo / mean_f, ci.hi / mean_f};
  }
  return b;
}

// "+0.109 [+0.052, +0.170]": a mean with its interval, both in format f.
std::string with_interval(std::optional<double> v, stats::Interval ci, const char* f) {
  return v ? stats::format_estimate(*v, ci, f) : "–";
}

// "75.0% [30.1, 100.0]": a share in percent with its interval in percent.
std::string percent_with_interval(std::optional<double> v, stats::Interval ci) {
  if (!v) return "–";
  char buf[96];
  if (std::isnan(ci.lo))
    std::snprintf(buf, sizeof buf, "%.1f%%", *v * 100);
  else
    std::snprintf(buf, sizeof buf, "%.1f%% [%.1f, %.1f]", *v * 100, ci.lo * 100, ci.hi * 100);
  return buf;
}

// "1.42x [1.35, 1.50]": a speed ratio with its interval.
std::string speed_with_interval(std::optional<double> v, stats::Interval ci) {
  if (!v) return "–";
  char buf[96];
  if (std::isnan(ci.lo))
    std::snprintf(buf, sizeof buf, "%.2fx", *v);
  else
    std::snprintf(buf, sizeof buf, "%.2fx [%.2f, %.2f]", *v, ci.lo, ci.hi);
  return buf;
}

}  // namespace

std::string speed_markdown(const std::vector<TableRow>& rows) {
  const auto spread = [](double median, stats::Interval r, const char* f) {
    if (std::isnan(median)) return std::string("–");
    char buf[128], lo[32], hi[32];
    std::snprintf(buf, sizeof buf, f, median);
    std::snprintf(lo, sizeof lo, f, r.lo);
    std::snprintf(hi, sizeof hi, f, r.hi);
    return std::string(buf) + " [" + lo + ", " + hi + "]";
  };
  std::ostringstream o;
  o << "| Configuration | Decode tok/s | Prefill tok/s | TTFT s | Inference Speed | Cells |\n"
       "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& r : rows)
    o << "| " << markdown_cell(r.label) << " | " << spread(r.decode_tok_s, r.decode_range, "%.1f")
      << " | " << spread(r.prefill_tok_s, r.prefill_range, "%.1f") << " | "
      << spread(r.ttft_seconds, r.ttft_range, "%.3f") << " | "
      << speed_with_interval(r.speed_rel, r.speed_rel_ci) << " | " << r.cells << " |\n";
  return o.str();
}

std::string format_bytes(double b) {
  char buf[64];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

std::vector<TableRow> build_table(const std::vector<json>& cells) {
  // Group by configuration, ordered by the policy's index in the experiment.
  std::map<std::pair<int, std::string>, std::vector<const json*>> groups;
  std::map<std::string, const json*> full_by_instance;
  for (const auto& c : cells) {
    const json& p = c["policy"];
    groups[{p.value("index", 0), p.value("label", std::string())}].push_back(&c);
    if (p.value("is_reference", false))
      full_by_instance[c["instance"]["id"].get<std::string>()] = &c;
  }
  std::vector<TableRow> rows;
  for (const auto& [key, members] : groups) {
    TableRow r;
    r.label = key.second;
    r.spec = (*members.front())["policy"].value("spec", std::string());
    r.cells = static_cast<int>(members.size());
    std::vector<double> score, hot, cold, peak, dec, pre, ttft, share, nll_d, kl, top1, needle,
        attended;
    double score_sum = 0, full_score_sum = 0, hot_sum = 0, full_bytes_sum = 0;
    std::vector<double> paired_score, paired_full_score;  // [instances with a full cell]
    std::vector<double> full_dec, speed_pairs;
    bool all_have_full = true;
    for (const json* c : members) {
      const double s = (*c)["score"].get<double>();
      score.push_back(s);
      hot.push_back(num(*c, "memory", "kv_bytes_hot"));
      cold.push_back(num(*c, "memory", "kv_bytes_cold"));
      peak.push_back(num(*c, "memory", "kv_bytes_peak_prefill"));
      dec.push_back(num(*c, "timing", "decode_tok_s"));
      pre.push_back(num(*c, "timing", "prefill_tok_s"));
      ttft.push_back(num(*c, "timing", "ttft_seconds"));
      share.push_back(num(*c, "timing", "policy_share"));
      kl.push_back(num(*c, "retention", "kl_full"));
      top1.push_back(num(*c, "retention", "top1_agreement"));
      needle.push_back(num(*c, "retention", "needle_survival"));
      attended.push_back(num(*c, "retention", "needle_attended"));
      const auto f = full_by_instance.find((*c)["instance"]["id"].get<std::string>());
      if (f == full_by_instance.end()) {
        all_have_full = false;
        continue;
      }
      const json& full = *f->second;
      score_sum += s;
      full_score_sum += full["score"].get<double>();
      paired_score.push_back(s);
      paired_full_score.push_back(full["score"].get<double>());
      hot_sum += num(*c, "memory", "kv_bytes_hot");
      full_bytes_sum += num(full, "memory", "kv_bytes_hot");
      full_dec.push_back(num(full, "timing", "decode_tok_s"));
      const double d = num(*c, "timing", "decode_tok_s"), fd = num(full, "timing", "decode_tok_s");
      if (d > 0 && fd > 0) speed_pairs.push_back(d / fd);
      nll_d.push_back(num(*c, "retention", "answer_nll") - num(full, "retention", "answer_nll"));
    }
    r.score = mean(score);
    const stats::Estimate e = stats::estimate_mean(score);
    r.score_ci = e.ci;
    r.score_kind = e.kind;
    r.score_wilson_floor = e.wilson_floor;
    r.kv_bytes_hot = mean(hot);
    r.kv_bytes_cold = mean(cold);
    r.kv_bytes_peak_prefill = mean(peak);
    r.decode_tok_s = stats::median(dec);
    r.prefill_tok_s = stats::median(pre);
    r.ttft_seconds = stats::median(ttft);
    r.decode_range = range(dec);
    r.prefill_range = range(pre);
    r.ttft_range = range(ttft);
    r.policy_share = stats::median(share);
    r.kl_full = opt(mean(kl));
    r.top1_agreement = opt(mean(top1));
    const bool reference = (*members.front())["policy"].value("is_reference", false);
    // Bootstrap over the instances that have the metric (the full cache's
    // own row compares nothing: no interval).
    const auto interval = [&](const std::vector<double>& x) {
      std::vector<double> have;
      for (double v : x)
        if (!std::isnan(v)) have.push_back(v);
      return reference ? stats::Interval{} : stats::bootstrap_mean_interval(have);
    };
    r.kl_full_ci = interval(kl);
    r.top1_agreement_ci = interval(top1);
    // Top-1 agreement is a share in [0, 1]. When every instance has the same
    // share below 1 (a row of 3-token answers that each keep 1 of 3), the
    // bootstrap has no spread to resample and collapses to that value; n
    // instances support no more than Wilson's interval at that mean
    // (stats::estimate_mean's reasoning). At 1 every position of every
    // instance agrees with the full cache, identical pairs: [1, 1] stands.
    if (r.top1_agreement && *r.top1_agreement < 1.0 &&
        r.top1_agreement_ci.lo == r.top1_agreement_ci.hi) {
      const auto n =
          std::count_if(top1.begin(), top1.end(), [](double v) { return !std::isnan(v); });
      r.top1_agreement_ci = stats::wilson_interval_at(*r.top1_agreement, n);
    }
    r.needle_survival = opt(mean(needle));
    r.needle_attended = opt(mean(attended));
    if (all_have_full) {
      if (full_score_sum > 0) {
        r.score_rel = score_sum / full_score_sum;
        // The full cache's own row is 100% by definition: no interval.
        if (!(*members.front())["policy"].value("is_reference", false))
          r.score_rel_ci = retention_interval(paired_score, paired_full_score);
      }
      if (full_bytes_sum > 0) r.memory_rel = hot_sum / full_bytes_sum;
      if (!speed_pairs.empty()) {
        r.speed_rel = stats::median(speed_pairs);
        if (!reference) r.speed_rel_ci = stats::bootstrap_median_interval(speed_pairs);
      }
      r.nll_delta = opt(mean(nll_d));
      r.nll_delta_ci = interval(nll_d);
    }
    rows.push_back(r);
  }
  return rows;
}

std::string table_markdown(const std::vector<TableRow>& rows) {
  std::ostringstream o;
  o << "| Configuration | Memory Usage | Inference Speed | Context Retention | KV bytes (hot) | KV "
       "bytes (cold) "
       "| Peak KV (prefill) | Decode tok/s | Prefill tok/s | TTFT s | Score | Interval | ΔNLL | "
       "KL(full‖policy) | Top-1 agree "
       "| Needle held | Needle attended | Policy time | Cells |\n"
       "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
       "---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : rows) {
    o << "| " << markdown_cell(r.label) << " | "
      << fmt(r.memory_rel ? std::optional(*r.memory_rel * 100) : std::nullopt, "%.1f%%") << " | "
      << speed_with_interval(r.speed_rel, r.speed_rel_ci) << " | "
      << percent_with_interval(r.score_rel, r.score_rel_ci) << " | " << format_bytes(r.kv_bytes_hot)
      << " | " << (r.kv_bytes_cold > 0 ? format_bytes(r.kv_bytes_cold) : "–") << " | "
      << (std::isnan(r.kv_bytes_peak_prefill) ? "–" : format_bytes(r.kv_bytes_peak_prefill))
      << " | " << fmt(opt(r.decode_tok_s), "%.1f") << " | " << fmt(opt(r.prefill_tok_s), "%.1f")
      << " | " << fmt(opt(r.ttft_seconds), "%.3f") << " | "
      << stats::format_estimate(r.score, r.score_ci) << " | " << r.score_method()
      << ", n=" << r.cells << " | " << with_interval(r.nll_delta, r.nll_delta_ci, "%+.3f") << " | "
      << with_interval(r.kl_full, r.kl_full_ci, "%.4f") << " | "
      << with_interval(r.top1_agreement, r.top1_agreement_ci, "%.3f") << " | "
      << fmt(r.needle_survival, "%.3f") << " | " << fmt(r.needle_attended, "%.3f") << " | "
      << fmt(std::isnan(r.policy_share) ? std::nullopt : std::optional(r.policy_share * 100),
             "%.1f%%")
      << " | " << r.cells << " |\n";
  }
  return o.str();
}

std::string table_csv(const std::vector<ModelRows>& models) {
  std::ostringstream o;
  o << "model,configuration,spec,cells,memory_rel,speed_rel,score_rel,kv_bytes_hot,kv_bytes_cold,"
       "decode_tok_s,prefill_tok_s,ttft_seconds,score,nll_delta,kl_full,top1_agreement,needle_"
       "survival,needle_attended,policy_share,kv_bytes_peak_prefill,score_lo,score_hi,score_"
       "interval,score_rel_lo,score_rel_hi,nll_delta_lo,nll_delta_hi,kl_full_lo,kl_full_hi,top1_"
       "agreement_lo,top1_agreement_hi,speed_rel_lo,speed_rel_hi\n";
  auto v = [](std::optional<double> x) { return x ? fmt(x, "%.6g") : std::string(); };
  // Whole bytes: a mean of byte counts, exact to the byte rather than to
  // six significant digits.
  auto bytes = [](double x) { return std::isnan(x) ? std::string() : fmt(x, "%.0f"); };
  for (const ModelRows& m : models)
    for (const auto& r : *m.rows) {
      o << csv_field(m.model) << "," << csv_field(r.label) << "," << csv_field(r.spec) << ","
        << r.cells << "," << v(r.memory_rel) << "," << v(r.speed_rel) << "," << v(r.score_rel)
        << "," << bytes(r.kv_bytes_hot) << "," << bytes(r.kv_bytes_cold) << ","
        << v(opt(r.decode_tok_s)) << "," << v(opt(r.prefill_tok_s)) << "," << v(opt(r.ttft_seconds))
        << "," << v(opt(r.score)) << "," << v(r.nll_delta) << "," << v(r.kl_full) << ","
        << v(r.top1_agreement) << "," << v(r.needle_survival) << "," << v(r.needle_attended) << ","
        << v(opt(r.policy_share)) << "," << bytes(r.kv_bytes_peak_prefill) << ","
        << v(opt(r.score_ci.lo)) << "," << v(opt(r.score_ci.hi)) << "," << r.score_method() << ","
        << v(opt(r.score_rel_ci.lo)) << "," << v(opt(r.score_rel_ci.hi)) << ","
        << v(opt(r.nll_delta_ci.lo)) << "," << v(opt(r.nll_delta_ci.hi)) << ","
        << v(opt(r.kl_full_ci.lo)) << "," << v(opt(r.kl_full_ci.hi)) << ","
        << v(opt(r.top1_agreement_ci.lo)) << "," << v(opt(r.top1_agreement_ci.hi)) << ","
        << v(opt(r.speed_rel_ci.lo)) << "," << v(opt(r.speed_rel_ci.hi)) << "\n";
    }
  return o.str();
}

nlohmann::json table_json(const std::vector<TableRow>& rows) {
  json out = json::array();
  auto v = [](std::optional<double> x) { return x ? json(*x) : json(nullptr); };
  for (const auto& r : rows) {
    out.push_back(
        {{"configuration", r.label},
         {"spec", r.spec},
         {"cells", r.cells},
         {"memory_rel", v(r.memory_rel)},
         {"speed_rel", v(r.speed_rel)},
         {"speed_rel_ci", {{"lo", v(opt(r.speed_rel_ci.lo))}, {"hi", v(opt(r.speed_rel_ci.hi))}}},
         {"score_rel", v(r.score_rel)},
         {"kv_bytes_hot", r.kv_bytes_hot},
         {"kv_bytes_cold", r.kv_bytes_cold},
         {"score", r.score},
         {"score_ci",
          {{"lo", v(opt(r.score_ci.lo))},
           {"hi", v(opt(r.score_ci.hi))},
           {"method", r.score_method()}}},
         {"score_rel_ci", {{"lo", v(opt(r.score_rel_ci.lo))}, {"hi", v(opt(r.score_rel_ci.hi))}}},
         {"nll_delta", v(r.nll_delta)},
         {"nll_delta_ci", {{"lo", v(opt(r.nll_delta_ci.lo))}, {"hi", v(opt(r.nll_delta_ci.hi))}}},
         {"kl_full", v(r.kl_full)},
         {"kl_full_ci", {{"lo", v(opt(r.kl_full_ci.lo))}, {"hi", v(opt(r.kl_full_ci.hi))}}},
         {"top1_agreement", v(r.top1_agreement)},
         {"top1_agreement_ci",
          {{"lo", v(opt(r.top1_agreement_ci.lo))}, {"hi", v(opt(r.top1_agreement_ci.hi))}}},
         {"needle_survival", v(r.needle_survival)},
         {"needle_attended", v(r.needle_attended)},
         {"kv_bytes_peak_prefill", v(opt(r.kv_bytes_peak_prefill))},
         {"timing",
          {{"decode_tok_s", v(opt(r.decode_tok_s))},
           {"prefill_tok_s", v(opt(r.prefill_tok_s))},
           {"ttft_seconds", v(opt(r.ttft_seconds))},
           {"decode_tok_s_range", {v(opt(r.decode_range.lo)), v(opt(r.decode_range.hi))}},
           {"prefill_tok_s_range", {v(opt(r.prefill_range.lo)), v(opt(r.prefill_range.hi))}},
           {"ttft_seconds_range", {v(opt(r.ttft_range.lo)), v(opt(r.ttft_range.hi))}},
           {"policy_share", v(opt(r.policy_share))}}}});
  }
  return out;
}

}  // namespace kvbench
