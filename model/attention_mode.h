// The attention arithmetic a run or command asks for (config
// "decoding.attention", --attention): besides f32 (llama.cpp's, the
// default), two options of the fast mode (8-bit activations), alone or
// together:
//   bf16   prefill attention on bfloat16 products (Evaluator::set_bf16_attention)
//   int8q  decode scores of quantized keys (int8 / int4 / int2 caches)
//          against an int8 query, integer dot products (Evaluator::set_q8_query)
// written "f32", "bf16", "int8q" or "bf16+int8q".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvbench {

class Evaluator;

struct AttentionMode {
  bool bf16 = false;
  bool int8_query = false;
  bool operator==(const AttentionMode&) const = default;
};

// The values parse_attention_mode takes, for messages.
inline constexpr std::string_view kAttentionModes = "f32, bf16, int8q, bf16+int8q";

// nullopt for any other text.
std::optional<AttentionMode> parse_attention_mode(std::string_view text);

// "f32", "bf16", "int8q" or "bf16+int8q".
std::string attention_mode_name(AttentionMode m);

// Sets both options on `eval`.
void apply_attention_mode(AttentionMode m, Evaluator& eval);

}  // namespace kvbench
