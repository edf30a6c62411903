#include "harness/run/cell_metrics.h"

#include <algorithm>
#include <cmath>

#include "model/steps.h"

namespace kvbench {

std::vector<int32_t> gold_answer_tokens(const Instance& inst, const Tokenizer& tok) {
  std::string text;
  if (inst.grader == "all_values" || inst.grader == "per_query") {
    for (size_t i = 0; i < inst.answers.size(); ++i) text += (i ? ", " : "") + inst.answers[i];
  } else if (!inst.answers.empty()) {
    text = inst.answers[0];
  }
  // The answer continues the assistant's answer prefix ("... is"): a space
  // separates them unless the prefix already ends with one.
  if (!inst.answer_prefix.empty() &&
      !std::isspace(static_cast<unsigned char>(inst.answer_prefix.back())))
    text = " " + text;
  return tok.encode(text, /*add_bos=*/false, /*parse_special=*/false);
}

Forced teacher_force(Evaluator& eval, KvCache& cache, const std::vector<float>& last_logits,
                     const std::vector<int32_t>& answer, int32_t first_position) {
  const int nv = eval.model().config().n_vocab;
  Forced f;
  f.log_probs.resize(answer.size() * nv);
  std::vector<float> logits = last_logits;
  double nll = 0.0;
  for (size_t i = 0; i < answer.size(); ++i) {
    if (i > 0) {
      const int32_t stream_pos = first_position + static_cast<int32_t>(i) - 1;
      const int32_t tok[1] = {answer[i - 1]}, pos[1] = {cache.position_for(0, stream_pos)};
      eval.step(tok, pos, 0, StepPhase::Decode, cache, Logits::Last, logits.data());
    }
    float* lp = f.log_probs.data() + i * nv;
    log_softmax(logits.data(), nv, lp);
    f.top1.push_back(static_cast<int32_t>(std::max_element(lp, lp + nv) - lp));
    nll -= lp[answer[i]];
  }
  f.nll = answer.empty() ? 0.0 : nll / answer.size();
  return f;
}

double mean_kl(const Forced& full, const Forced& policy, int n_vocab) {
  const size_t n = full.top1.size();
  if (n == 0) return 0.0;
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const float* p = full.log_probs.data() + i * n_vocab;
    const float* q = policy.log_probs.data() + i * n_vocab;
    double kl = 0.0;
    for (int v = 0; v < n_vocab; ++v) kl += std::exp(static_cast<double>(p[v])) * (p[v] - q[v]);
    total += std::max(0.0, kl);  // rounding can make an exact match a hair negative
  }
  return total / n;
}

double top1_agreement(const Forced& full, const Forced& policy) {
  if (full.top1.empty()) return 1.0;
  int same = 0;
  for (size_t i = 0; i < full.top1.size(); ++i) same += full.top1[i] == policy.top1[i];
  return static_cast<double>(same) / full.top1.size();
}

nlohmann::json needle_survival(const PolicyCache& cache, const Prompt& prompt) {
  if (prompt.needle_tokens.empty()) return nullptr;
  const Span needle = prompt.needle_tokens[0];  // the needle the question asks about
  if (needle.size() <= 0) return nullptr;
  const KvShape& s = cache.shape();
  // Share of the needle's tokens per head: held in any tier, and attended
  // (in the hot set attention reads at question time, restored pages included).
  struct Survival {
    nlohmann::json per_layer = nlohmann::json::array(), per_head = nlohmann::json::array();
    double total = 0.0;
  } held, attended;
  for (int l = 0; l < s.n_layers; ++l) {
    double held_sum = 0.0, attended_sum = 0.0;
    nlohmann::json held_heads = nlohmann::json::array(), attended_heads = nlohmann::json::array();
    for (int h = 0; h < s.n_kv_heads; ++h) {
      int64_t n_held = 0, n_attended = 0;
      for (int64_t t = needle.begin; t < needle.end; ++t) {
        n_held += cache.holds(l, h, t) ? 1 : 0;
        n_attended += cache.attends(l, h, t) ? 1 : 0;
      }
      held_heads.push_back(static_cast<double>(n_held) / needle.size());
      attended_heads.push_back(static_cast<double>(n_attended) / needle.size());
      held_sum += held_heads.back().get<double>();
      attended_sum += attended_heads.back().get<double>();
    }
    held.per_head.push_back(held_heads);
    held.per_layer.push_back(held_sum / s.n_kv_heads);
    held.total += held_sum;
    attended.per_head.push_back(attended_heads);
    attended.per_layer.push_back(attended_sum / s.n_kv_heads);
    attended.total += attended_sum;
  }
  const double heads = s.n_layers * s.n_kv_heads;
  return {{"overall", held.total / heads},
          {"per_layer", held.per_layer},
          {"per_head", held.per_head},
          {"attended",
           {{"overall", attended.total / heads},
            {"per_layer", attended.per_layer},
            {"per_head", attended.per_head}}}};
}

uint64_t kv_bytes_hot(const PolicyCache& cache) {
  const MemoryReport m = cache.memory();
  return m.hot.kv + m.hot.scales;
}

nlohmann::json memory_json(const PolicyCache& cache) {
  const MemoryReport m = cache.memory();
  nlohmann::json j = {{"kv_bytes_hot", m.hot.kv + m.hot.scales},
                      {"kv_bytes_cold", m.cold.kv + m.cold.scales},
                      {"meta_bytes_hot", m.hot.meta},
                      {"meta_bytes_cold", m.cold.meta},
                      {"policy_state_bytes", m.policy_state},
                      {"kv_bytes_peak_prefill", cache.peak_prefill_kv_bytes()},
                      {"entries_hot", m.hot.entries},
                      {"entries_cold", m.cold.entries}};
  // Models with sliding-window layers: the hot K/V split by layer kind.
  if (!cache.context().layer_window.empty()) {
    MemoryBytes global, local;
    for (size_t l = 0; l < m.hot_layers.size(); ++l)
      (cache.window(static_cast<int>(l)) > 0 ? local : global) += m.hot_layers[l];
    j["kv_bytes_hot_global"] = global.kv + global.scales;
    j["kv_bytes_hot_local"] = local.kv + local.scales;
    j["entries_hot_global"] = global.entries;
    j["entries_hot_local"] = local.entries;
  }
  return j;
}

}  // namespace kvbench
