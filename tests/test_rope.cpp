// RoPE's per-step table (RopeTable, built once per forward step and shared by
// every layer) against the angles computed per call, bit for bit, in both
// pairings.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/ops/rope.h"

namespace kvbench {
namespace {

// The rotation as it was written before the table: angle, cos and sin per
// pair, inside the loop over pairs (the arithmetic every path must keep).
void per_call(float* x, int n_vectors, int stride, int64_t pos, const std::vector<float>& inv,
              bool neox) {
  const int half = static_cast<int>(inv.size());
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv[i];
    const float c = std::cos(angle), s = std::sin(angle);
    for (int v = 0; v < n_vectors; ++v) {
      float* p = x + static_cast<int64_t>(v) * stride;
      float& a = neox ? p[i] : p[2 * i];
      float& b = neox ? p[i + half] : p[2 * i + 1];
      const float a0 = a, b0 = b;
      a = a0 * c - b0 * s;
      b = a0 * s + b0 * c;
    }
  }
}

TEST(Rope, TableRowsRotateAsAnglesComputedPerCall) {
  const int head_dim = 64, n_vectors = 9;
  for (const int n_dims : {64, 32}) {  // all dimensions, or the first half (the rest pass through)
    RopeConfig r;
    r.n_dims = n_dims;
    r.freq_base = 500000.0f;
    const std::vector<float> inv = rope_inv_freq(r);
    // Positions out of order, repeated, large, and a negative one.
    const std::vector<int32_t> positions = {0, 1, 7, 511, 32767, 3, 3, 1000000, -5, 4096, 2};
    const auto n = static_cast<int64_t>(positions.size());
    RopeTable table;
    table.resize(n, inv);
    table.fill(positions, 0, 4, inv);  // in two ranges, as two threads fill it
    table.fill(positions, 4, n, inv);
    ASSERT_EQ(table.half, n_dims / 2);
    std::vector<float> x(static_cast<size_t>(n_vectors) * head_dim);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i) + 1.0f);
    for (int64_t t = 0; t < n; ++t) {
      for (const bool neox : {false, true}) {
        std::vector<float> want = x, got = x, old_api = x;
        per_call(want.data(), n_vectors, head_dim, positions[t], inv, neox);
        (neox ? rope_rotate_neox_cs : rope_rotate_cs)(got.data(), n_vectors, head_dim,
                                                      table.cos_at(t), table.sin_at(t), table.half);
        (neox ? rope_rotate_neox : rope_rotate)(old_api.data(), n_vectors, head_dim, positions[t],
                                                inv);
        EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << "table, position " << positions[t] << (neox ? " neox" : " pairs");
        EXPECT_EQ(0, std::memcmp(want.data(), old_api.data(), want.size() * sizeof(float)))
            << "per call, position " << positions[t] << (neox ? " neox" : " pairs");
      }
    }
  }
}

}  // namespace
}  // namespace kvbench
