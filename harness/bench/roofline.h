// The limits a throughput figure is judged against (docs/PERFORMANCE.md):
//  - decode streams every weight matrix once per token plus the K/V rows it
//    attends over, so tokens/s <= read bandwidth / bytes per token;
//  - prefill is compute-bound: FLOPs per token (2 per multiply-add) against
//    what the cores can execute.
// The bandwidth is measured here, on this machine, with the same thread pool
// the model uses; nothing is taken from a spec sheet.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama_model.h"
#include "model/ops/kv_cache.h"
#include "model/ops/thread_pool.h"

namespace kvbench {

struct BandwidthMeasurement {
  double median_bytes_per_s = 0;  // over the passes
  double best_bytes_per_s = 0;
  int64_t buffer_bytes = 0;
  int passes = 0;
};

// The median of a measurement's per-pass rates (sorted copy; mean of the two
// middle values for an even count). `rates` must not be empty.
double median_of_passes(std::vector<double> rates);

// Reads a buffer of `buffer_bytes` (far larger than the last-level cache)
// `passes` times, each thread streaming its own contiguous slice, and times
// each pass. The buffer is written once first so every page is mapped.
BandwidthMeasurement measure_read_bandwidth(ThreadPool& pool,
                                            int64_t buffer_bytes = int64_t{1} << 30,
                                            int passes = 7);

// Bytes one decode step reads, the mean over steps at positions [first,
// first + n): every weight matrix of every layer, the output matrix (the
// whole vocabulary's logits are computed), the norms, one row of the token
// embedding (when it is not also the output matrix), plus the K and V rows of
// the cached tokens each layer attends at `kv_bytes_per_element`: the p before
// a step at p, at most window - 1 of them on a sliding-window layer (Gemma 3's
// local layers; decode skips what the window hides).
double decode_bytes_per_token(const LlamaModel& model, int64_t first, int64_t n,
                              double kv_bytes_per_element);

// FLOPs of one prefill token (2 per multiply-add), the mean over tokens at
// positions [first, first + n): the layer matrices, QK^T and PV over the
// positions a token attends (causal: p + 1 at p; at most the window on a
// sliding-window layer). The output matrix is applied to the last token of a
// prompt only, so it is left out.
double prefill_flops_per_token(const LlamaModel& model, int64_t first, int64_t n);

}  // namespace kvbench
