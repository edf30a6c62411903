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

}  // namespace kvbench
