// One task instance: the text a model reads, the question it is asked, what
// counts as a right answer, and where the needles sit (in characters here; in
// tokens once datasets/prompt.h lays the instance out for a model). Written
// and read as one JSON object per line (datasets/jsonl.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/common/span.h"

namespace kvbench {

struct Instance {
  std::string id;    // unique in a dataset: task, variant, length, depth, sample, seed
  std::string task;  // a name from task_names()
  // Text of the user turn, in order: preamble, context, question (the
  // question may go first, see build_prompt). answer_prefix opens the
  // assistant's turn (RULER's answer prefix); the model continues it.
  std::string preamble;
  std::string context;
  std::string question;
  std::string answer_prefix;
  // Accepted answers; for multi-value tasks (grader all_values, per_query)
  // every listed value is required.
  std::vector<std::string> answers;
  // Byte spans of the needles in `context`; needles[0] is the one the
  // question asks about (the one placed at the requested depth). Empty for ppl.
  std::vector<Span> needles;
  struct Depth {
    double requested = 0;  // 0 = start of the context, 1 = end
    double actual = 0;     // context tokens before needles[0] / (context tokens - its tokens)
    friend bool operator==(const Depth&, const Depth&) = default;
  } depth;
  struct Length {
    int64_t requested = 0;  // context tokens asked for
    int64_t actual = 0;     // context tokens (encoded alone, no BOS)
    int64_t question = 0;   // tokens of preamble + question + answer prefix, counted apart
    friend bool operator==(const Length&, const Length&) = default;
  } length;
  int sample = 0;
  uint64_t seed = 0;
  int generator_version = 0;
  std::string grader;      // exact | contains | numeric | all_values | per_query | perplexity
  int max_new_tokens = 0;  // generation budget the task needs
  nlohmann::json extra = nlohmann::json::object();  // task specifics (keys, variant, hops, ...)

  friend bool operator==(const Instance&, const Instance&) = default;
};

// JSON with a fixed key order (same instance -> same bytes).
nlohmann::ordered_json to_json(const Instance& instance);
// Throws InputError naming the missing or mistyped field.
Instance instance_from_json(const nlohmann::json& j);

}  // namespace kvbench
