#include "model/sampler.h"

#include <algorithm>
#include <cmath>

namespace kvbench {

int32_t argmax(const float* logits, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

Sampler::Sampler(const SamplerConfig& config) : config_(config), state_(config.seed) {}

double Sampler::next_uniform() {
  // splitmix64: a fixed, portable stream for a given seed.
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(const float* logits, int32_t n_vocab) {
  if (config_.temperature <= 0.0f) return argmax(logits, n_vocab);
  candidates_.resize(n_vocab);
  for (int32_t i = 0; i < n_vocab; ++i) candidates_[i] = {logits[i], i};
  // Descending by logit, ties by id, so the order is fully determined.
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t keep = candidates_.size();
  if (config_.top_k > 0 && static_cast<size_t>(config_.top_k) < keep) {
    keep = config_.top_k;
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  // Softmax over the kept candidates at the temperature, in double.
  std::vector<double> p(keep);
  const double max = candidates_[0].first;
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((candidates_[i].first - max) / config_.temperature);
    sum += p[i];
  }
  // Nucleus: the smallest prefix whose mass reaches top_p.
  if (config_.top_p < 1.0f) {
    double mass = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      mass += p[i] / sum;
      if (mass >= config_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += p[i];
  }
  double r = next_uniform() * sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0.0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

}  // namespace kvbench
