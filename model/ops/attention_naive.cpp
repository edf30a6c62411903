// The naive reference of attention (see attend_naive in model/ops/attention.h):
// obviously right, slow, and independent of the kernels it checks.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "model/ops/attention.h"

namespace kvbench {

void attend_naive(const AttentionShape& s, int layer, const float* q,
                  std::span<const int32_t> positions, KvCache& cache, float* out) {
  const int64_t n_tokens = static_cast<int64_t>(positions.size());
  const int hd = s.head_dim;
  const int G = s.n_heads / s.n_kv_heads;
  const int64_t q_stride = int64_t{s.n_heads} * hd;
  const double scale =
      s.scale > 0.0f ? static_cast<double>(s.scale) : 1.0 / std::sqrt(static_cast<double>(hd));
  const AttentionRequest request = cache.attention_request(layer);
  const int64_t first =
      request.last_queries < 0 ? 0 : std::max<int64_t>(0, n_tokens - request.last_queries);
  for (int h = 0; h < s.n_kv_heads; ++h) {
    const KvHeadView& view = cache.view(layer, h);
    const int32_t n = view.size();
    const std::vector<int32_t> pos(view.positions(), view.positions() + n);
    std::vector<float> kbuf(static_cast<size_t>(n) * hd), vbuf(static_cast<size_t>(n) * hd);
    const float* k = view.keys(0, n, kbuf.data());
    const float* v = view.values(0, n, vbuf.data());
    // probs[t][g][j], reported after the head is done.
    std::vector<float> probs(static_cast<size_t>(n_tokens) * G * n);
    std::vector<double> p(n);
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int g = 0; g < G; ++g) {
        const float* qv = q + t * q_stride + (int64_t{h} * G + g) * hd;
        double mx = -INFINITY;
        for (int32_t j = 0; j < n; ++j) {
          double dot = 0.0;
          for (int d = 0; d < hd; ++d) dot += static_cast<double>(qv[d]) * k[int64_t{j} * hd + d];
          double x = dot * scale;
          if (s.softcap > 0.0f) x = s.softcap * std::tanh(x / s.softcap);  // Gemma 2
          p[j] = attn::visible(pos[j], positions[t], s.window) ? x : -INFINITY;
          mx = std::max(mx, p[j]);
        }
        double sum = 0.0;
        for (int32_t j = 0; j < n; ++j) {
          p[j] = p[j] == -INFINITY ? 0.0 : std::exp(p[j] - mx);
          sum += p[j];
        }
        float* o = out + t * q_stride + (int64_t{h} * G + g) * hd;
        for (int d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (int32_t j = 0; j < n; ++j) acc += p[j] * v[int64_t{j} * hd + d];
          o[d] = sum > 0.0 ? static_cast<float>(acc / sum) : 0.0f;
        }
        for (int32_t j = 0; j < n; ++j)
          probs[(t * G + g) * n + j] = sum > 0.0 ? static_cast<float>(p[j] / sum) : 0.0f;
      }
    }
    if (!request.wanted) continue;
    for (int64_t t = first; t < n_tokens; ++t) {
      AttentionRows rows;
      rows.layer = layer;
      rows.kv_head = h;
      rows.query_index = static_cast<int32_t>(t);
      rows.query_pos = positions[t];
      rows.group = G;
      rows.n = n;
      rows.probs = probs.data() + t * G * n;
      rows.head_stride = n;
      cache.observe(rows);
    }
  }
}

}  // namespace kvbench
