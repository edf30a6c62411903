#include "policies/reconstruction.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include <cblas.h>

#include "model/ops/thread_pool.h"

namespace kvbench {
namespace {

// The softmax's loops in arithmetic the compiler vectorizes: libm's expf
// is one call per element, and without fast-math a reduction into one
// accumulator stays scalar. A pass scores ~(n + 20) x n x n_q_heads x
// n_layers exponentials, as many as the pass's own attention.

// e^x for x <= 0: 2^(x log2 e) = 2^i 2^f, 2^f by a degree-6 polynomial on
// [0, 1) (relative error < 2e-7); 0 below e^-87 (and for -inf).
inline float exp_nonpositive(float x) {
  const float t = std::max(x, -126.0f) * 1.44269504088896341f;
  int32_t i = static_cast<int32_t>(t);  // toward 0: the ceiling, t <= 0
  i -= static_cast<int32_t>(static_cast<float>(i) > t);
  const float f = t - static_cast<float>(i);  // [0, 1)
  float p = 1.535336188319500e-4f;
  p = p * f + 1.339887440266574e-3f;
  p = p * f + 9.618437357674640e-3f;
  p = p * f + 5.550332471162809e-2f;
  p = p * f + 2.402264791363012e-1f;
  p = p * f + 6.931472028550421e-1f;
  p = p * f + 1.0f;
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(i + 127) << 23);
  return x < -87.0f ? 0.0f : p * scale;
}

constexpr int kLanes = 8;

float lane_max(const float* x, int64_t n) {
  float lane[kLanes];
  std::fill_n(lane, kLanes, -INFINITY);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) lane[k] = std::max(lane[k], x[j + k]);
  for (; j < n; ++j) lane[0] = std::max(lane[0], x[j]);
  return *std::max_element(lane, lane + kLanes);
}

double lane_sum(const float* x, int64_t n) {
  float lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) lane[k] += x[j + k];
  double sum = 0.0;
  for (; j < n; ++j) sum += x[j];
  for (float v : lane) sum += v;
  return sum;
}

}  // namespace

std::vector<ReconstructionPass> reconstruction_passes(std::span<const int32_t> prompt, int64_t head,
                                                      std::span<const int32_t> suffix_ids,
                                                      std::span<const int32_t> first_ids,
                                                      std::span<const int32_t> next_ids,
                                                      int chunk) {
  std::vector<ReconstructionPass> out;
  const int64_t n = static_cast<int64_t>(prompt.size());
  for (int64_t b = head; b < n; b += chunk) {
    ReconstructionPass p;
    p.begin = b;
    p.end = std::min<int64_t>(n, b + chunk);
    if (b == head) {
      p.ids.assign(first_ids.begin(), first_ids.end());
    } else {
      // "... starting with" the previous chunk's last ids.
      p.ids.assign(next_ids.begin(), next_ids.end());
      const int64_t from = std::max<int64_t>(b - chunk, b - kReconstructionOverlap);
      p.ids.insert(p.ids.end(), prompt.begin() + from, prompt.begin() + b);
    }
    p.ids.insert(p.ids.end(), suffix_ids.begin(), suffix_ids.end());
    p.ids.insert(p.ids.end(), prompt.begin() + p.begin, prompt.begin() + p.end);
    out.push_back(std::move(p));
  }
  return out;
}

ReconstructionRecorder::ReconstructionRecorder(KvCache& inner, int64_t n_prompt, int sinks,
                                               ThreadPool* pool)
    : inner_(inner),
      n_prompt_(n_prompt),
      sinks_(sinks),
      pool_(pool),
      tables_(static_cast<size_t>(inner.shape().n_layers) * inner.shape().n_kv_heads,
              std::vector<float>(n_prompt, 0.0f)) {}

void ReconstructionRecorder::set_span(int64_t begin, int64_t end) {
  begin_ = begin;
  end_ = end;
}

AttentionRequest ReconstructionRecorder::attention_request(int layer) const {
  AttentionRequest r = inner_.attention_request(layer);
  r.queries = true;
  return r;
}

void ReconstructionRecorder::observe_queries(int layer, const float* q,
                                             std::span<const int32_t> positions) {
  const KvShape& s = inner_.shape();
  const int H = s.n_kv_heads, G = s.n_q_heads / s.n_kv_heads, d = s.head_dim;
  const int64_t n_rows = static_cast<int64_t>(positions.size());
  const int64_t sink_end = std::min<int64_t>(sinks_, begin_);
  const int64_t span = end_ - begin_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int ranges = pool_ ? pool_->size() : 1;
  std::vector<float> scratch, keys;      // the view's keys; K' rows [m][d]
  std::vector<int32_t> key_pos;          // [m] positions of K'
  std::vector<std::vector<float>> best;  // [range][span] the range's column maxima
  for (int h = 0; h < H; ++h) {
    // K' in kvpress's order: sinks, the span, the pass's own entries. The
    // view is copied: it is valid only until the next call on the cache.
    const KvHeadView& view = inner_.view(layer, h);
    const int32_t n = view.size();
    const int32_t* pos = view.positions();
    scratch.resize(static_cast<size_t>(n) * d);
    const float* k = view.keys(0, n, scratch.data());
    keys.clear();
    key_pos.clear();
    int64_t span_first = -1;  // K' index of the span's first entry
    auto take = [&](int32_t j) {
      keys.insert(keys.end(), k + int64_t{j} * d, k + int64_t{j + 1} * d);
      key_pos.push_back(pos[j]);
    };
    for (int32_t j = 0; j < n; ++j)
      if (pos[j] < sink_end) take(j);
    for (int32_t j = 0; j < n; ++j)
      if (pos[j] >= begin_ && pos[j] < end_) {
        if (span_first < 0) span_first = static_cast<int64_t>(key_pos.size());
        take(j);
      }
    const int64_t span_last = static_cast<int64_t>(key_pos.size());
    for (int32_t j = 0; j < n; ++j)
      if (pos[j] >= n_prompt_) take(j);
    if (span_first < 0) continue;
    const int64_t m = static_cast<int64_t>(key_pos.size());
    best.assign(ranges, std::vector<float>(span, 0.0f));
    // A block of rows at a time: its logits [rows x G][m] by one product
    // (the range's thread multiplies alone), then each row's softmax.
    auto rows = [&](int64_t t0, int64_t t1, int range) {
      constexpr int64_t kBlock = 64;
      std::vector<float> qb, lg;
      std::vector<float>& out = best[range];
      for (int64_t b0 = t0; b0 < t1; b0 += kBlock) {
        const int64_t nb = std::min(kBlock, t1 - b0), n_rows_b = nb * G;
        qb.resize(n_rows_b * d);
        for (int64_t t = 0; t < nb; ++t)
          std::copy_n(q + ((b0 + t) * s.n_q_heads + h * G) * d, G * d, qb.data() + t * G * d);
        lg.resize(n_rows_b * m);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n_rows_b),
                    static_cast<int>(m), d, scale, qb.data(), d, keys.data(), d, 0.0f, lg.data(),
                    static_cast<int>(m));
        for (int64_t r = 0; r < n_rows_b; ++r) {
          float* logit = lg.data() + r * m;
          const int32_t at = positions[b0 + r / G];
          // Sinks and span come before the pass: every row sees them; of
          // the pass, a row sees its own and earlier entries (causal).
          for (int64_t j = span_last; j < m; ++j)
            if (key_pos[j] > at) logit[j] = -INFINITY;
          const float top = lane_max(logit, m);
          for (int64_t j = 0; j < m; ++j) logit[j] = exp_nonpositive(logit[j] - top);
          const float inv = static_cast<float>(1.0 / lane_sum(logit, m));
          for (int64_t j = span_first; j < span_last; ++j) {
            float& o = out[key_pos[j] - begin_];
            o = std::max(o, logit[j] * inv);
          }
        }
      }
    };
    if (pool_)
      pool_->parallel_for(n_rows, [&](int64_t t0, int64_t t1, int r) { rows(t0, t1, r); });
    else
      rows(0, n_rows, 0);
    std::vector<float>& table = tables_[static_cast<size_t>(layer) * H + h];
    for (const auto& r : best)
      for (int64_t c = 0; c < span; ++c) table[begin_ + c] = std::max(table[begin_ + c], r[c]);
  }
  if (inner_.attention_request(layer).queries) inner_.observe_queries(layer, q, positions);
}

}  // namespace kvbench
