// The machine's own limits, the yardsticks of docs/PERFORMANCE.md:
//  - ReadBandwidth: streaming reads of 1 GiB (far beyond the last-level
//    cache) with the model's thread pool (harness/roofline.h), bytes/s;
//  - PeakFma: AVX-512 f32 fused multiply-adds on registers only, FLOP/s
//    (2 per multiply-add) per thread;
//  - PeakVnni: AVX-512 VNNI u8 x s8 dot products (vpdpbusd: 64 multiply-adds
//    each), integer ops/s (2 per multiply-add) per thread — what the 8-bit
//    activation kernels are built on.
// The peaks use independent accumulators (more than the FMA latency x
// throughput product) so they measure throughput, not latency.
//
//   build/tests/kvbench_microbench --benchmark_filter='ReadBandwidth|Peak'
#include <benchmark/benchmark.h>

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "harness/roofline.h"

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
BENCHMARK(BM_ReadBandwidth)->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Iterations(3)
    ->Unit(benchmark::kMillisecond);

#if defined(__x86_64__)
constexpr int kRounds = 1 << 16;

__attribute__((target("avx512f"))) float fma_loop() {
  // 12 independent chains: covers a 4-cycle FMA latency x 2 pipes with room.
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    // An empty asm that "may change" the accumulators: the compiler cannot
    // fold the loop away, and no instruction is added.
    for (int i = 0; i < 12; ++i) asm volatile("" : "+v"(acc[i]));
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512vnni"))) int vnni_loop() {
  __m512i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    for (int i = 0; i < 12; ++i) asm volatile("" : "+v"(acc[i]));
  }
  __m512i s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_epi32(s, acc[i]);
  return _mm512_reduce_add_epi32(s);
}

void BM_PeakFma(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512F");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(fma_loop());
  state.SetItemsProcessed(state.iterations() * int64_t{kRounds} * 12 * 16 * 2);  // FLOPs
}
BENCHMARK(BM_PeakFma)->Threads(1)->Threads(2)->UseRealTime();

void BM_PeakVnni(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512vnni")) {
    state.SkipWithError("no AVX-512 VNNI");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(vnni_loop());
  state.SetItemsProcessed(state.iterations() * int64_t{kRounds} * 12 * 64 * 2);  // integer ops
}
BENCHMARK(BM_PeakVnni)->Threads(1)->Threads(2)->UseRealTime();
#endif

}  // namespace
}  // namespace kvbench
