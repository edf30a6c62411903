#include "model/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace kvbench {
namespace {

struct HeadInputs {
  int32_t n = 0;
  const int32_t* pos = nullptr;
  const float* k = nullptr;  // [n][head_dim]
  const float* v = nullptr;  // [n][head_dim]
};

// Masked softmax of one score row in place: entries with pos > qpos get 0.
void softmax_causal(float* row, const int32_t* pos, int32_t n, int32_t qpos) {
  float max = -std::numeric_limits<float>::infinity();
  for (int32_t j = 0; j < n; ++j)
    if (pos[j] <= qpos) max = std::max(max, row[j]);
  double sum = 0.0;
  for (int32_t j = 0; j < n; ++j) {
    const float e = pos[j] <= qpos ? std::exp(row[j] - max) : 0.0f;
    row[j] = e;
    sum += e;
  }
  // Every query sees at least itself, so sum > 0.
  assert(sum > 0.0);
  const float inv = static_cast<float>(1.0 / sum);
  for (int32_t j = 0; j < n; ++j) row[j] *= inv;
}

}  // namespace

void attend(const AttentionShape& s, int layer, const float* q, std::span<const int32_t> positions,
            KvCache& cache, float* out, ThreadPool& pool, AttentionScratch& scratch) {
  const int64_t n_tokens = static_cast<int64_t>(positions.size());
  const int hd = s.head_dim;
  const int q_stride = s.n_heads * hd;  // between tokens in q and out
  const int group = s.n_heads / s.n_kv_heads;

  // Fetch every KV head's view once, on this thread (the cache is not
  // required to be thread-safe).
  scratch.k_decoded.resize(s.n_kv_heads);
  scratch.v_decoded.resize(s.n_kv_heads);
  std::vector<HeadInputs> heads(s.n_kv_heads);
  int32_t n_max = 0;
  for (int h = 0; h < s.n_kv_heads; ++h) {
    const KvHeadView& view = cache.view(layer, h);
    HeadInputs& in = heads[h];
    in.n = view.size();
    in.pos = view.positions();
    auto& kd = scratch.k_decoded[h];
    auto& vd = scratch.v_decoded[h];
    if (kd.size() < static_cast<size_t>(in.n) * hd) kd.resize(static_cast<size_t>(in.n) * hd);
    if (vd.size() < static_cast<size_t>(in.n) * hd) vd.resize(static_cast<size_t>(in.n) * hd);
    in.k = view.keys(0, in.n, kd.data());
    in.v = view.values(0, in.n, vd.data());
    n_max = std::max(n_max, in.n);
  }
  const size_t head_scores = static_cast<size_t>(n_tokens) * n_max;
  if (scratch.scores.size() < head_scores * s.n_heads) scratch.scores.resize(head_scores * s.n_heads);

  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // One work unit per query head: scores S = scale * Q K^T, masked softmax,
  // out = P V. Each unit writes only its own slice, so the split is
  // deterministic.
  pool.parallel_for(s.n_heads, [&](int64_t h0, int64_t h1, int) {
    for (int64_t qh = h0; qh < h1; ++qh) {
      const HeadInputs& in = heads[qh / group];
      float* S = scratch.scores.data() + qh * head_scores;  // [n_tokens][n_max]
      // S[t][j] = scale * q[t][qh] . k[j]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n_tokens), in.n, hd,
                  scale, q + qh * hd, q_stride, in.k, hd, 0.0f, S, n_max);
      for (int64_t t = 0; t < n_tokens; ++t) softmax_causal(S + t * n_max, in.pos, in.n, positions[t]);
      // out[t][qh] = S[t] V
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n_tokens), hd, in.n,
                  1.0f, S, n_max, in.v, hd, 0.0f, out + qh * hd, q_stride);
    }
  });

  const AttentionRequest request = cache.attention_request(layer);
  if (!request.wanted) return;
  const int64_t first = request.last_queries < 0
                            ? 0
                            : std::max<int64_t>(0, n_tokens - request.last_queries);
  for (int kvh = 0; kvh < s.n_kv_heads; ++kvh) {
    for (int64_t t = first; t < n_tokens; ++t) {
      AttentionRows rows;
      rows.layer = layer;
      rows.kv_head = kvh;
      rows.query_index = static_cast<int32_t>(t);
      rows.query_pos = positions[t];
      rows.group = group;
      rows.n = heads[kvh].n;
      rows.probs = scratch.scores.data() + (kvh * group) * head_scores + t * n_max;
      rows.head_stride = static_cast<int64_t>(head_scores);
      cache.observe(rows);
    }
  }
}

}  // namespace kvbench
