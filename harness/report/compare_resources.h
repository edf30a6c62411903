// What `compare` says about memory and speed beside the scores: per
// configuration, the hot KV bytes and the decode speed of the base and the
// new run on the instances both have. Informational, never part of the
// gate: memory is deterministic (a change is a change of the policy), while
// speed carries the machine's noise, so it comes with an interval.
//
// Speed, as the table's Inference Speed: per instance, the cell's decode
// tok/s over the same run's full cache on that instance (each run against
// its own reference, so the two runs' machines and loads cancel), the
// median over the instances; the change is the median over the instances
// of new / base of those ratios, with a 95% bootstrap interval of that
// median (stats::bootstrap_median_interval; none below 3 instances).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/report/stats.h"

namespace kvbench {

// One cell's resources; NaN where the record has none.
struct CellResources {
  double hot_bytes = NAN;          // memory.kv_bytes_hot
  double decode_tok_s = NAN;       // timing.decode_tok_s
  double full_decode_tok_s = NAN;  // the same run's full cache on the same instance
};

struct ResourceCheck {
  int64_t n = 0;                             // paired instances
  double base_hot = NAN, new_hot = NAN;      // mean hot KV bytes
  double base_speed = NAN, new_speed = NAN;  // median speed relative to the run's full cache
  int64_t speed_n = 0;                       // instances with a speed in both runs
  double speed_change = NAN;                 // median of new / base per instance
  stats::Interval speed_change_ci;           // its 95% bootstrap interval
};

// base[i] and next[i] are the same instance's cells.
ResourceCheck compare_resources(const std::vector<CellResources>& base,
                                const std::vector<CellResources>& next);

}  // namespace kvbench
