// Random keys, values and queries of a small model for cache tests:
// [layer][token][head][dim] rows from one seeded generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvbench::test {

struct KvqShape {
  int layers, kv_heads, q_heads, dim;
};

struct RandomKvq {
  // Standard normal draws, per layer all keys, then all values, then all
  // queries: a key is a draw times key_scale(i) when given (i: its index in
  // the layer's keys), a query q_scale times a draw.
  RandomKvq(KvqShape shape, int tokens, uint32_t seed, float q_scale = 1.0f,
            float (*key_scale)(size_t) = nullptr);

  const float* key(int l, int t, int h) const {
    return &k[l][(size_t{1} * t * shape.kv_heads + h) * shape.dim];
  }
  const float* query(int l, int t, int qh) const {
    return &q[l][(size_t{1} * t * shape.q_heads + qh) * shape.dim];
  }

  KvqShape shape;
  std::vector<std::vector<float>> k, v, q;  // [layer][rows]
};

}  // namespace kvbench::test
