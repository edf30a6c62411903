// The machine's own limits, the yardsticks of docs/PERFORMANCE.md:
//  - ReadBandwidth: streaming reads of 1 GiB (far beyond the last-level
//    cache) with the model's thread pool (harness/bench/roofline.h), bytes/s;
//  - PeakFma: AVX-512 f32 fused multiply-adds on registers only, FLOP/s
//    (2 per multiply-add) per thread;
//  - PeakVnni: AVX-512 VNNI u8 x s8 dot products (vpdpbusd: 64 multiply-adds
//    each), integer ops/s (2 per multiply-add) per thread — what the 8-bit
//    activation kernels are built on;
//  - PeakVnniQ4_1Mix: the same vpdpbusd among the other vector instructions
//    the Q4_1 products need per block (counted: the vpdpbusd alone), the
//    ceiling llama.cpp's arithmetic puts on those products.
// The peak loops are kvbench bench --roofline's (harness/bench/compute_peak.h).
//
//   build/tests/kvbench_microbench --benchmark_filter='ReadBandwidth|Peak'
#include <benchmark/benchmark.h>

#include <cstdint>

#include "harness/bench/compute_peak.h"
#include "harness/bench/roofline.h"

namespace kvbench {
namespace {

void BM_ReadBandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  BandwidthMeasurement m;
  for (auto _ : state) {
    m = measure_read_bandwidth(pool, int64_t{1} << 30, 5);
    state.SetIterationTime(static_cast<double>(m.buffer_bytes) * m.passes / m.median_bytes_per_s);
  }
  state.counters["median_GBps"] = m.median_bytes_per_s / 1e9;
  state.counters["best_GBps"] = m.best_bytes_per_s / 1e9;
  state.SetBytesProcessed(state.iterations() * m.buffer_bytes * m.passes);
}
BENCHMARK(BM_ReadBandwidth)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

// One peak loop per iteration on each benchmark thread; its operations
// counted as items (FLOPs or integer ops). Skipped where the CPU lacks them.
void run_peak(benchmark::State& state, PeakLoop (*loop)(), const char* missing) {
  if (loop().ops == 0) {
    state.SkipWithError(missing);
    return;
  }
  int64_t ops = 0;
  for (auto _ : state) {
    const PeakLoop l = loop();
    benchmark::DoNotOptimize(l.result);
    ops += l.ops;
  }
  state.SetItemsProcessed(ops);
}

void BM_PeakFma(benchmark::State& state) { run_peak(state, f32_fma_loop, "no AVX-512F"); }
BENCHMARK(BM_PeakFma)->Threads(1)->Threads(2)->UseRealTime();

void BM_PeakVnni(benchmark::State& state) { run_peak(state, int8_vnni_loop, "no AVX-512 VNNI"); }
BENCHMARK(BM_PeakVnni)->Threads(1)->Threads(2)->UseRealTime();

// Items: the vpdpbusd's integer ops alone.
void BM_PeakVnniQ4_1Mix(benchmark::State& state) {
  run_peak(state, int8_vnni_q4_1_mix_loop, "no AVX-512 VNNI");
}
BENCHMARK(BM_PeakVnniQ4_1Mix)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace kvbench
