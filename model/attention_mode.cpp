#include "model/attention_mode.h"

#include "model/evaluator.h"

namespace kvbench {

std::optional<AttentionMode> parse_attention_mode(std::string_view text) {
  if (text == "f32") return AttentionMode{};
  if (text == "bf16") return AttentionMode{true, false};
  if (text == "int8q") return AttentionMode{false, true};
  if (text == "bf16+int8q") return AttentionMode{true, true};
  return std::nullopt;
}

std::string attention_mode_name(AttentionMode m) {
  if (m.bf16 && m.int8_query) return "bf16+int8q";
  if (m.bf16) return "bf16";
  if (m.int8_query) return "int8q";
  return "f32";
}

void apply_attention_mode(AttentionMode m, Evaluator& eval) {
  eval.set_bf16_attention(m.bf16);
  eval.set_q8_query(m.int8_query);
}

}  // namespace kvbench
