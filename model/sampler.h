// Next-token choice from logits: greedy by default; temperature, top-k and
// top-p (nucleus) sampling with a seeded generator whose stream is fixed
// across platforms (splitmix64, not std:: distributions).
#pragma once

#include <cstdint>
#include <vector>

namespace kvbench {

struct SamplerConfig {
  float temperature = 0.0f;  // 0 = greedy (argmax, lowest id on ties)
  int top_k = 0;             // 0 = all tokens
  float top_p = 1.0f;        // 1 = no nucleus cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& config);
  int32_t sample(const float* logits, int32_t n_vocab);

 private:
  double next_uniform();  // [0, 1)
  SamplerConfig config_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> candidates_;
};

int32_t argmax(const float* logits, int32_t n);

}  // namespace kvbench
