// The cores' arithmetic peaks, measured (never from a spec sheet): the
// yardsticks a prefill's achieved FLOP/s is judged against
// (kvbench bench --roofline, docs/PERFORMANCE.md).
//  - f32: AVX-512 fused multiply-adds, FLOP/s (2 per multiply-add): what the
//    exact path's sgemm runs on;
//  - int8: AVX-512 VNNI u8 x s8 dot products (vpdpbusd, 64 multiply-adds
//    each), integer ops/s (2 per multiply-add): what the quantized kernels
//    run on.
// Each loop keeps 12 independent accumulators in registers (more than FMA
// latency x throughput), so it measures throughput, not latency.
#pragma once

#include <cstdint>

#include "model/ops/thread_pool.h"

namespace kvbench {

// One pass of each loop on the calling thread: its result (kept so the loop
// cannot be folded away) and the operations it performed. 0 operations: the
// CPU lacks the instructions.
struct PeakLoop {
  double result = 0;
  int64_t ops = 0;
};
PeakLoop f32_fma_loop();
PeakLoop int8_vnni_loop();
// int8_vnni_loop's vpdpbusd (only they are counted) among the other vector
// instructions the quantized Q4_1 products need per block: the ceiling that
// llama.cpp's arithmetic puts on those products, below the bare VNNI peak.
PeakLoop int8_vnni_q4_1_mix_loop();

struct ComputePeak {
  double f32_flops_per_s = 0;  // 0: no AVX-512 on this CPU
  double int8_ops_per_s = 0;   // 0: no AVX-512 VNNI
  int passes = 0;
};

// Every thread of `pool` runs each loop at once, `passes` times; the median
// pass's operations per wall-clock second.
ComputePeak measure_compute_peak(ThreadPool& pool, int passes = 5);

}  // namespace kvbench
