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
#include "harness/run/file_names.h"
#include "model/llama_model.h"
#include "policies/policy_spec.h"

namespace kvbench {

// The model a plan runs: what each of its cells records.
struct PlannedModel {
  size_t index = 0;    // in the config's models
  std::string path;    // as the config gives it
  std::string label;   // ModelEntry::label
  std::string key;     // model_file_key(label) with several models, else "" (ids as before)
  std::string sha256;  // of the file, filled by the caller (hashing takes a while)
};

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
  PlannedModel model;
  std::vector<Instance> instances;
  std::vector<PlannedPolicy> policies;  // policies[0] is the full cache
  // Per instance: whether its question goes before the context, and the
  // policies it runs (indices into `policies`, always including 0).
  std::vector<bool> question_first;
  std::vector<std::vector<size_t>> instance_policies;
  // The most tokens one cell's sequence holds: its prompt plus its
  // generation budget, over every instance. The run's context per sequence,
  // as llama.cpp's would be set to hold them (LlamaModel::load: a LongRoPE
  // file takes its long factors beyond its original context).
  int64_t longest_sequence = 0;
  int64_t cells() const;
  // "<instance>--<policy slug>", with several models "<model key>--<instance>--<policy slug>".
  std::string cell_id(size_t instance, size_t policy) const;
  // Where the instance's kept prefill lives (harness/run/kept_prefill.h):
  // its id, prefixed with the model key like the cell ids.
  std::string prefill_key(size_t instance) const;
};

// The plan of config.models[model_index] (loaded as `model`). Throws
// InputError naming the config file and field (and the model, when there are
// several) for unknown tasks or options, lengths the model cannot hold, bad
// specs or budgets.
Plan make_plan(const ExperimentConfig& config, const LlamaModel& model, size_t model_index = 0);

// Instances of this shard: index % count == shard - 1 (shard is 1-based).
bool in_shard(size_t instance_index, int shard, int count);

}  // namespace kvbench
