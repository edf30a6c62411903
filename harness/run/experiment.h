// Experiment configs: JSON files in experiments/, with `--set key=value`
// overrides applied before validation. Every error names the file and the
// JSON path of the bad field ("experiments/x.json: /tasks/0/lengths/1: ...").
//
// {
//   "name": "quick",                       // default: the file's stem
//   "description": "...",
//   "model": "models/...gguf",             // default: $KVBENCH_MODEL or the default model
//   "models": ["a.gguf", {"path": "b.gguf", "label": "Gemma"}],  // instead of "model":
//                                           // the grid runs on each, into one run folder
//   "threads": 2,                          // default: all cores
//   "seed": 1,
//   "tasks": [ {"task": "passkey", "lengths": [1024, 2048], "depths": [0.1, 0.5, 0.9],
//               "samples": 2, "options": {},
//               "question_first": false,          // optional, per task
//               "policies": ["full", "h2o"]},     // optional: a subset, by label or spec
//              {"jsonl": "my-instances.jsonl"} ],
//   "policies": [ "full", "snapkv:window=32+int8",
//                 {"spec": "h2o", "budgets": [128, 256, 0.2], "label": "Attention-based"},
//                 {"policy": "snapkv", "budget": 256, "window": 8} ],  // parameters as fields
//   "decoding": {"max_new_tokens": 0, "chunk": 512, "question_first": false, "exact": false,
//                "attention": "f32", "protocol": "query_aware"},
//                                           // max_new_tokens 0 = the task's own
//   "metrics": {"teacher_forced": true, "needle_survival": true},
//   "output": "results",
//   "limit": 0                             // > 0: at most this many instances per task entry
//                                          // (the first in grid order: a smoke test)
// }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attention_mode.h"

namespace kvbench {

struct TaskGrid {
  std::string task;              // generator name, or empty with jsonl
  std::string jsonl;             // instances from a file instead of a generator
  std::vector<int64_t> lengths;  // context tokens
  std::vector<double> depths;    // needle depth in [0, 1]
  int samples = 1;
  nlohmann::json options = nlohmann::json::object();
  std::optional<bool> question_first;  // overrides decoding.question_first for these instances
  std::vector<std::string>
      policies;  // labels or specs of the experiment's policies to run here (empty: all)
};

struct PolicyGrid {
  std::string spec;             // e.g. "h2o" or "snapkv:window=32+int8"
  std::string label;            // display name in the table (default: the spec)
  std::vector<double> budgets;  // empty: the spec as written; > 1 tokens, <= 1 ratio
};

// When a policy compresses, relative to the question (both always labelled):
//   QueryAware     the seed's: the whole prompt, question included, is
//                  prefilled; the policy compresses after it.
//   QueryAgnostic  kvpress's: the context is prefilled and compressed (a
//                  ratio budget is a ratio of the context); the question is
//                  then appended whole and nothing is evicted while it and
//                  the answer run, so the choice could not use the question.
enum class Protocol { QueryAware, QueryAgnostic };
const char* protocol_name(Protocol p);  // "query_aware", "query_agnostic"

struct DecodingConfig {
  int max_new_tokens = 0;  // 0: each task's own generation budget
  int chunk = 512;
  bool question_first = false;
  // f32 activations (the exact reference path) instead of 8-bit ones (as
  // llama.cpp computes; the default, several times faster).
  bool exact = false;
  // "attention": "bf16" (prefill attention on bfloat16 products), "int8q"
  // (decode scores of quantized keys against an int8 query) or
  // "bf16+int8q" (model/attention_mode.h; fast mode only). Default
  // "f32".
  AttentionMode attention;
  Protocol protocol = Protocol::QueryAware;
  // Cells of an instance whose answers decode together, one step of this
  // many rows (Evaluator::step_batch: the weight matmuls once per step).
  // Every answer is the same as decoded alone; a batched cell's speed is its
  // batch's (timing.decode_batch_tok_s), its own decode_tok_s is null. Also
  // the most cells' caches held at once.
  int batch = 1;
};

struct MetricsConfig {
  bool teacher_forced = true;  // answer NLL, KL(full || policy), top-1 agreement
  bool needle_survival = true;
};

// One model of an experiment. The label names it in tables, plots and cell
// ids (default: the file name without its extension); labels are distinct.
struct ModelEntry {
  std::string path;
  std::string label;
};

// At most this many models in one experiment.
constexpr size_t kMaxModels = 16;

struct ExperimentConfig {
  std::string name;
  std::string description;
  std::string model;               // models[0].path (the only model unless "models" lists more)
  std::vector<ModelEntry> models;  // at least one
  bool models_listed = false;      // the config gave "models" (written back as "models")
  int threads = 0;
  uint64_t seed = 1;
  std::vector<TaskGrid> tasks;
  std::vector<PolicyGrid> policies;
  DecodingConfig decoding;
  MetricsConfig metrics;
  std::string output = "results";
  // Keep each instance's shared full-cache prefill on disk (DIR/prefills/,
  // harness/snapshot/snapshot_file.h) until its cells are done, so that --resume after
  // an interruption loads it instead of computing it again.
  bool keep_prefills = false;
  // > 0: each task entry keeps its first `limit` instances (grid order:
  // lengths, then depths, then samples; a JSONL file's first lines).
  int limit = 0;
  std::string source;  // the file it came from (for messages)
};

// Applies "a.b.0.c=value" to a JSON document; value is parsed as JSON when it
// parses (numbers, arrays, true/false, quoted strings), else taken as a
// string. Throws InputError naming the key.
void apply_override(nlohmann::json& doc, const std::string& assignment);

// Validates a whole document (unknown fields, types, ranges) and fills the
// defaults; `source` names the file in errors.
ExperimentConfig parse_experiment(const nlohmann::json& doc, const std::string& source);

// Reads a file (InputError for unreadable or malformed JSON, with line and
// column), applies overrides, parses.
ExperimentConfig load_experiment(const std::string& path,
                                 const std::vector<std::string>& overrides);

// The default label of a model file: its name without the extension.
std::string model_label_of_path(const std::string& path);

// The resolved config, defaults included (written to the run folder).
nlohmann::json to_json(const ExperimentConfig& config);

}  // namespace kvbench
