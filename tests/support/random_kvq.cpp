#include "tests/support/random_kvq.h"

#include <random>

namespace kvbench::test {

RandomKvq::RandomKvq(KvqShape s, int tokens, uint32_t seed, float q_scale,
                     float (*key_scale)(size_t))
    : shape(s), k(s.layers), v(s.layers), q(s.layers) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int l = 0; l < s.layers; ++l) {
    k[l].resize(size_t{1} * tokens * s.kv_heads * s.dim);
    v[l].resize(k[l].size());
    q[l].resize(size_t{1} * tokens * s.q_heads * s.dim);
    for (size_t i = 0; i < k[l].size(); ++i) k[l][i] = key_scale ? n(rng) * key_scale(i) : n(rng);
    for (float& x : v[l]) x = n(rng);
    for (float& x : q[l]) x = q_scale * n(rng);
  }
}

}  // namespace kvbench::test
