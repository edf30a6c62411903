// A random output projection (CacheContext::output_projection) for caches
// made without a model: normal weights, [hidden][n_q_heads * head_dim] per
// layer, the same for the same seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/ops/kv_cache.h"
#include "policies/cache_context.h"

namespace kvbench::test {

class RandomProjection final : public OutputProjection {
 public:
  RandomProjection(const KvShape& shape, int hidden, uint32_t seed = 11)
      : hidden_(hidden), w_(shape.n_layers) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto& layer : w_) {
      layer.resize(static_cast<size_t>(hidden) * shape.n_q_heads * shape.head_dim);
      for (float& x : layer) x = n(rng);
    }
  }
  const float* layer(int l) const override { return w_[l].data(); }
  int64_t dim() const override { return hidden_; }

 private:
  int hidden_;
  std::vector<std::vector<float>> w_;
};

}  // namespace kvbench::test
