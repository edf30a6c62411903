// The benchmark table: one row per configuration (policy label), aggregated
// over its cells, with memory and speed relative to the full cache and
// retention as score relative to full, plus the absolute figures.
//
// A cell record (cells/<id>.json, written by the runner) holds:
//   policy.label, policy.spec, instance.{id, task, length, depth}, score,
//   memory.{kv_bytes_hot, kv_bytes_cold, kv_bytes_full, kv_bytes_peak_prefill},
//   retention.{answer_nll, kl_full, top1_agreement, needle_survival (held in
//   any tier), needle_attended (hot or restored at question time)} (null
//   when not measured),
//   timing.{prefill_tok_s, decode_tok_s, ttft_seconds, policy_share, peak_rss_bytes}
// Fields under "timing" vary between runs; everything else is deterministic.
//
// The score and Context Retention carry their 95% interval over the row's
// instances (harness/report/stats.h): Wilson when every score of the row is 0
// or 1, otherwise a percentile bootstrap. Retention, a ratio of paired sums:
// the score's interval scaled by the full cache's score when that is the same
// on every instance, otherwise a bootstrap over the instance pairs; none for
// the full cache's own row (100% by definition).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/stats.h"

namespace kvbench {

struct TableRow {
  std::string label;
  std::string spec;
  int cells = 0;
  double score = 0.0;        // mean task score
  stats::Interval score_ci;  // its 95% interval
  // Which interval: Wilson (pass/fail) or bootstrap, widened to at least
  // Wilson's when every score is in [0, 1] (stats::Estimate::wilson_floor).
  stats::ScoreKind score_kind = stats::ScoreKind::PassFail;
  bool score_wilson_floor = false;
  // The score interval's method for legends (stats::interval_method).
  const char* score_method() const {
    return stats::interval_method(score_kind, score_wilson_floor);
  }
  std::optional<double> score_rel;  // mean score / full's mean score on the same instances
  stats::Interval score_rel_ci;     // its 95% interval; NaN without score_rel and for full's row
  double kv_bytes_hot = 0.0;        // mean
  double kv_bytes_cold = 0.0;
  double kv_bytes_peak_prefill = 0.0;  // mean of the cells' peaks (NaN for old records)
  std::optional<double> memory_rel;    // hot bytes / full's bytes on the same instances
  double decode_tok_s = 0.0;           // median
  double prefill_tok_s = 0.0;          // median
  // Decode tok/s over the full cache's on the same instance: the median of
  // those paired ratios, with a 95% bootstrap interval of that median over
  // the instances (cells of an instance run one after another, so each pair
  // shares the machine's state; NaN for the full cache's own row and with
  // fewer than 3 pairs).
  std::optional<double> speed_rel;
  stats::Interval speed_rel_ci;
  double ttft_seconds = 0.0;  // median
  // The spread of the speeds over the row's cells: their smallest and
  // largest values (NaN when no cell has one). Not a confidence interval:
  // the cells differ in context length and task as well as in noise.
  stats::Interval decode_range, prefill_range, ttft_range;
  double policy_share = 0.0;        // median share of time inside the policy
  std::optional<double> nll_delta;  // mean teacher-forced answer NLL minus full's
  std::optional<double> kl_full;    // mean KL(full || policy) at answer positions
  std::optional<double> top1_agreement;
  // 95% percentile bootstrap intervals over the row's instances of the three
  // above (ΔNLL paired with the full cache per instance; KL and top-1
  // agreement are per-instance comparisons with it already); NaN for the
  // full cache's own row and with fewer than 2 instances.
  stats::Interval nll_delta_ci, kl_full_ci, top1_agreement_ci;
  std::optional<double> needle_survival;  // held in any tier
  std::optional<double> needle_attended;  // in the set attention read at question time
};

// Rows in the order configurations first appear in `cells` (the runner writes
// full first). The full cache's row is the reference for the relative columns.
std::vector<TableRow> build_table(const std::vector<nlohmann::json>& cells);

std::string table_markdown(const std::vector<TableRow>& rows);

// One model's rows, for table.csv.
struct ModelRows {
  std::string model;  // its label (untrusted text: csv_field encodes it)
  const std::vector<TableRow>* rows = nullptr;
};
// table.csv: one schema whatever the number of models (docs/HARNESS.md): a
// header, then each model's rows in the order given, each row beginning
// with its model's label. Byte counts (means over a row's cells) are
// rounded to whole bytes; a value a row does not have is an empty field.
std::string table_csv(const std::vector<ModelRows>& models);
nlohmann::json table_json(const std::vector<TableRow>& rows);

// The speed table of the report: per configuration the median decode and
// prefill tokens/s and time to first token, each with its spread over the
// cells [slowest, fastest], and the number of cells.
std::string speed_markdown(const std::vector<TableRow>& rows);

// "3.4 MiB", "512 B"
std::string format_bytes(double bytes);

}  // namespace kvbench
