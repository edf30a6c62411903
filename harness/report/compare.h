// Regression gate: compares two run folders configuration by configuration
// (policy label) and task, pairing the cells of each group by instance id;
// when either run has several models, model by model (matched by label; a
// model of one run only is named and not compared, none in common is an
// InputError). Two runs of one model each compare whatever the models' names.
//
// A group regressed when the paired test calls its drop significant
// (one-sided p < 0.05: mid-p McNemar when every paired score is 0 or 1,
// otherwise the paired bootstrap over instances held in check by the mid-p
// sign test; stats::paired_p) AND the drop of
// the mean score is larger than the tolerance. Either alone is not enough: a
// large drop on a handful of instances can be noise, and a significant drop
// within the tolerance is one the caller accepted. Instances of BASE missing
// from NEW are a failure too (coverage regressed); instances only in NEW are
// counted, not tested.
//
// The report gives per group: n paired instances, the test, both means with
// their 95% intervals, the difference, p, the smallest drop the test could
// have called significant with n instances (stats::min_detectable_drop) and
// the verdict; then the continuous metrics (harness/report/compare_metrics.h)
// of every group where any changed, every cell whose score changed, a note
// for each group too small to detect a drop of the tolerance's size, and the
// result line ("RESULT: regression" or "RESULT: no significant regression").
// Beside the gate, per configuration: memory and speed in both runs
// (harness/report/compare_resources.h), informational.
// A significant worsening of a continuous metric beyond `metric_tolerance`
// is a regression too.
//
// The same comparison is also kept as data (CompareResult's other fields),
// raw text from the folders, for `compare --json` (compare_json.h), which
// encodes it for its sink.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/report/compare_metrics.h"
#include "harness/report/compare_resources.h"
#include "harness/report/stats.h"

namespace kvbench {

// One row of the per-configuration table: a base configuration and task (of
// one model), paired with the new run's cells by instance.
struct CompareGroup {
  std::string model;              // its label; "" when each run has one model
  std::string configuration;      // the base run's label
  std::string new_configuration;  // the new run's label it is compared with; "" when none
  std::string spec;               // the base's canonical spec; "" for cells without one
  std::string task;
  int64_t n = 0;                     // paired instances
  std::string test;                  // stats::paired_test_name; "" when n = 0
  stats::Estimate base, next;        // over the n paired instances
  double delta = NAN;                // new mean - base mean
  double p = NAN;                    // one-sided, for a drop
  double min_detectable_drop = NAN;  // NaN: no drop of n instances can be significant
  int64_t min_detectable_flips = 0;  // 0 with it
  bool undetectable = false;         // n > 0 and that drop is larger than the tolerance
  int64_t missing = 0;               // base instances not in the new run
  // "REGRESSED", "drop not significant", "significant drop within
  // tolerance", "improved", "ok"; "" when n = 0 (missing instances apart).
  std::string status;
  bool regressed = false;  // the group fails the gate: its score, a metric or missing instances
  std::vector<MetricCheck> metrics;  // every metric both runs have
};

// A base configuration not matched by the same label and spec.
struct ConfigurationMatch {
  std::string model, label, spec;
  // "renamed" (same spec, matched), "spec changed" (same label, another spec:
  // not compared) or "missing" (neither label nor spec in the new run).
  std::string match;
  std::string new_label, new_spec;  // "" for "missing"
};

struct ChangedCell {
  std::string model, cell, instance, configuration;
  double base = NAN, next = NAN;
};

struct CompareResult {
  bool regressed = false;  // a significant drop beyond the tolerance, or missing instances
  std::string report;      // the tables and notes, markdown

  // The comparison as data (raw strings), in the report's order.
  std::string base_dir, new_dir;
  double tolerance = 0.0, metric_tolerance = 0.0;
  std::string base_arithmetic, new_arithmetic, base_decoding, new_decoding;
  std::vector<std::string> notes;  // the report's "Note:" lines: another arithmetic, decoding
  std::vector<ConfigurationMatch> configurations;
  std::vector<std::pair<std::string, std::string>> models_in_one_run;  // model, "base" or "new"
  std::vector<CompareGroup> groups;
  std::vector<ChangedCell> changed;
  // Memory and speed per (model, base configuration), over every task.
  struct Resources {
    std::string model, configuration;
    ResourceCheck check;
  };
  std::vector<Resources> resources;
  int64_t base_cells = 0, new_cells = 0, missing = 0, only_in_new = 0;
};

// InputError (naming the file and field) for a folder or cell that cannot be
// read, and for two cells of one folder with the same configuration, task
// and instance (they could not be paired).
CompareResult compare_runs(const std::string& base_dir, const std::string& new_dir,
                           double tolerance, double metric_tolerance = 0.01);

}  // namespace kvbench
