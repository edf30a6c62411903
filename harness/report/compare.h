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
// A significant worsening of a continuous metric beyond `metric_tolerance`
// is a regression too.
#pragma once

#include <string>

namespace kvbench {

struct CompareResult {
  bool regressed = false;  // a significant drop beyond the tolerance, or missing instances
  std::string report;      // the tables and notes, markdown
};

// InputError (naming the file and field) for a folder or cell that cannot be
// read, and for two cells of one folder with the same configuration, task
// and instance (they could not be paired).
CompareResult compare_runs(const std::string& base_dir, const std::string& new_dir,
                           double tolerance, double metric_tolerance = 0.01);

}  // namespace kvbench
