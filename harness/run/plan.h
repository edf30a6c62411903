// The grid of an experiment: instances (generated, or read from JSONL) x
// policies (each spec at each of its budgets), every cell with a stable id
// "<instance id>--<policy slug>". Built and validated completely before a run
// folder is created, so a bad config leaves nothing behind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "datasets/instance.h"
#include "harness/run/experiment.h"
#include "model/llama_model.h"
#include "policies/policy_spec.h"

namespace kvbench {

// The one file-name mapping (cell ids, plots, kept prefills): `s` with every
// character other than [A-Za-z0-9.-] replaced by '_' and a leading '.' by
// '_'; longer than kMaxFileNameStem, a prefix, '~' and 16 hex digits of the
// SHA-256 of `s`. Not injective by itself ("a/b" and "a_b" both give "a_b"):
// make_plan refuses ids and specs whose file names collide.
constexpr size_t kMaxFileNameStem = 100;
std::string file_name_safe(const std::string& s);

struct PlannedPolicy {
  int index = 0;          // order in the table
  std::string label;      // table row name
  std::string canonical;  // to_string(spec)
  std::string slug;       // file-name-safe canonical, used in cell ids
  PolicySpec spec;
  std::string base;              // the spec as written in the config, without the grid budget
  std::optional<double> budget;  // the grid budget, when the config gave budgets
  bool is_reference = false;     // the full cache
};

struct Plan {
  std::vector<Instance> instances;
  std::vector<PlannedPolicy> policies;  // policies[0] is the full cache
  // Per instance: whether its question goes before the context, and the
  // policies it runs (indices into `policies`, always including 0).
  std::vector<bool> question_first;
  std::vector<std::vector<size_t>> instance_policies;
  int64_t cells() const;
  std::string cell_id(size_t instance, size_t policy) const;
};

// Throws InputError naming the config file and field for unknown tasks or
// options, lengths the model cannot hold, bad specs or budgets.
Plan make_plan(const ExperimentConfig& config, const LlamaModel& model);

// Instances of this shard: index % count == shard - 1 (shard is 1-based).
bool in_shard(size_t instance_index, int shard, int count);

}  // namespace kvbench
