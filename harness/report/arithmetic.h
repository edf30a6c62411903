// The arithmetic a run's config.json names, for its report and for compare:
// the activations ("decoding.exact") and the prefill attention's products
// ("decoding.attention", f32 when absent). Two runs of different arithmetic
// differ in every number, not only where their policies differ.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kvbench {

// "fast (8-bit activations), f32 attention" and the like. Raw text (the
// attention value comes from the file, cut to 16 bytes): the caller encodes
// it for its sink. Fields of another type read as their defaults.
std::string arithmetic_text(const nlohmann::json& config);

// The rest of what decides every cell's numbers besides the policy: the
// protocol, the prefill chunk, the answer budget and the question's place:
// "query-aware, chunk 512, task's answer budget, question last". Raw text;
// fields of another type read as their defaults.
std::string decoding_text(const nlohmann::json& config);

}  // namespace kvbench
