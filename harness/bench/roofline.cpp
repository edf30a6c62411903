#include "harness/bench/roofline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

namespace kvbench {
namespace {

// XOR of 64-bit words with eight independent accumulators: no dependency
// chain long enough to hide memory stalls, and the compiler vectorizes it.
// The result is used (returned and folded) so the reads cannot be dropped.
uint64_t xor_read(const uint64_t* p, int64_t n) {
  uint64_t a[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] ^= p[i + j];
  for (; i < n; ++i) a[0] ^= p[i];
  uint64_t r = 0;
  for (uint64_t v : a) r ^= v;
  return r;
}

int64_t matrix_bytes(const WeightMatrix& w) { return w.rows * static_cast<int64_t>(w.row_bytes); }

// Keys a token at p attends, summed over the layers and averaged over the
// positions [first, first + n): `self` 1 counts the token's own key (prefill
// attention), 0 only the cached ones before it (decode's reads).
double mean_keys_over_layers(const LlamaModel& model, int64_t first, int64_t n, int self) {
  if (n <= 0) return 0.0;
  const LlamaConfig& c = model.config();
  double sum = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    const int64_t w = c.window_of(l);  // 0: global
    for (int64_t p = first; p < first + n; ++p)
      sum += static_cast<double>(w > 0 ? std::min(p + self, w - 1 + self) : p + self);
  }
  return sum / static_cast<double>(n);
}

}  // namespace

double median_of_passes(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  const size_t n = rates.size();
  return n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
}

BandwidthMeasurement measure_read_bandwidth(ThreadPool& pool, int64_t buffer_bytes, int passes) {
  const int64_t words = buffer_bytes / 8;
  // 4 KiB-aligned, default-initialised (no zeroing pass), then written by the
  // threads that will read each slice so first-touch places the pages.
  std::unique_ptr<uint64_t[]> buf(new (std::align_val_t{4096}) uint64_t[words]);
  pool.parallel_for(words, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  });
  std::vector<uint64_t> sink(pool.size(), 0);
  std::vector<double> rates;
  volatile uint64_t keep = 0;
  for (int p = 0; p < passes + 1; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(
        words, [&](int64_t b, int64_t e, int range) { sink[range] ^= xor_read(&buf[b], e - b); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (p > 0) rates.push_back(static_cast<double>(words * 8) / s);  // pass 0 warms up
  }
  for (uint64_t v : sink) keep = keep ^ v;
  BandwidthMeasurement m;
  m.buffer_bytes = words * 8;
  m.passes = passes;
  m.best_bytes_per_s = *std::max_element(rates.begin(), rates.end());
  m.median_bytes_per_s = median_of_passes(rates);
  return m;
}

double decode_bytes_per_token(const LlamaModel& model, int64_t first, int64_t n,
                              double kv_bytes_per_element) {
  const LlamaWeights& w = model.weights();
  double bytes = 0;
  for (const LayerWeights& l : w.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      bytes += matrix_bytes(*m);
    bytes += 4.0 * (l.attn_norm.size() + l.ffn_norm.size() + l.q_norm.size() + l.k_norm.size() +
                    l.attn_post_norm.size() + l.ffn_post_norm.size() + l.bq.size() + l.bk.size() +
                    l.bv.size());
  }
  bytes += matrix_bytes(w.output) + 4.0 * w.output_norm.size();
  if (!w.tied_output) bytes += w.tok_embd.row_bytes;
  const KvShape s = model.kv_shape();
  bytes += 2.0 * s.n_kv_heads * s.head_dim * kv_bytes_per_element *
           mean_keys_over_layers(model, first, n, 0);
  return bytes;
}

double prefill_flops_per_token(const LlamaModel& model, int64_t first, int64_t n) {
  double macs = 0;
  for (const LayerWeights& l : model.weights().layers)
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      macs += static_cast<double>(m->rows) * m->cols;
  const KvShape s = model.kv_shape();
  // QK^T and PV: head_dim multiply-adds each per query head and attended position.
  macs += 2.0 * s.n_q_heads * s.head_dim * mean_keys_over_layers(model, first, n, 1);
  return 2.0 * macs;
}

}  // namespace kvbench
