// Task generators: needle-in-a-haystack (classic), passkey, RULER-style
// retrieval (niah_single / multikey / multivalue / multiquery, variable
// tracking), question answering over invented entities, and long text for
// perplexity. Deterministic: the same request and tokenizer give a
// byte-identical instance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/instance.h"
#include "model/tokenizer/tokenizer.h"

namespace kvbench {

// Bumped whenever a generator's output changes for the same request.
inline constexpr int kGeneratorVersion = 2;

// niah, passkey, niah_single, niah_multikey, niah_multivalue, niah_multiquery, vt, qa, ppl.
std::vector<std::string> task_names();

struct TaskRequest {
  std::string task;
  int64_t length = 1000;  // context tokens (the question and chat template come on top)
  double depth = 0.5;     // where the needle the question asks about goes: 0 start .. 1 end
  int sample = 0;         // index within a cell; picks keys, values, haystack offset
  uint64_t seed = 0;
  // Task options (all optional; unknown keys are errors):
  //   passkey          haystack: noise | essay
  //   niah_single      haystack: noise | essay;  value: number | uuid
  //   niah_multikey    haystack: noise | essay | needles;  value: number | uuid;  distractors: N
  //   (3) niah_multivalue  haystack: noise | essay;  values: N (4) niah_multiquery  haystack: noise
  //   | essay;  queries: N (4) vt               hops: N (4);  chains: N (1; more adds distractor
  //   chains) qa               hops: 1 | 2;  distractors: N (4) ppl              source: reference
  //   | essay
  nlohmann::json options = nlohmann::json::object();
};

// The instance for the request: context of exactly `length` tokens of `tok`
// (within 2%; typically within 0.5%), the target needle at the sentence
// boundary nearest `depth`. Keys, values and haystack offset depend on
// (task, sample, seed) only, so one sample has the same needle at every
// length and depth. Throws InputError naming the field: unknown task or
// option, depth outside [0, 1], a length too short for the needles or
// absurdly long.
Instance generate_instance(const TaskRequest& request, const Tokenizer& tok);

}  // namespace kvbench
