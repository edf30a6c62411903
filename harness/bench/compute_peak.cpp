#include "harness/bench/compute_peak.h"

#include <chrono>
#include <vector>

#include "harness/bench/roofline.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvbench {
namespace {

constexpr int kRounds = 1 << 16;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) float fma_loop() {
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
// vnni_loop's vpdpbusd with the other vector instructions the Q4_1 / Q8_1
// products need per 16 of them (model/ops/quant_dot_interleaved_avx512.cpp,
// per two tokens x one block x 16 rows: the two half sums added, the int ->
// float conversion, the scale product and two FMAs each, and 3 of the 4-bit
// decode's shift / and per 16 vpdpbusd at 8 tokens per decode), in
// registers only: the most those products can reach on this core while
// keeping llama.cpp's arithmetic.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) int vnni_q4_1_mix_loop() {
  __m512i acc[16];
  __m512 f[8];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_epi32(i);
  for (int i = 0; i < 8; ++i) f[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  const __m512 scale = _mm512_set1_ps(0.999999f);
  for (int r = 0; r < kRounds / 2; ++r) {
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    for (int i = 0; i < 2; ++i) {
      const __m512i sum = _mm512_add_epi32(acc[2 * i], acc[2 * i + 1]);
      const __m512 d = _mm512_mul_ps(scale, f[i + 4]);
      f[i] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum), f[i]);
      f[i + 2] = _mm512_fmadd_ps(scale, f[i + 6], f[i + 2]);
    }
    a = _mm512_and_si512(_mm512_srli_epi16(a, 1), b);
    b = _mm512_and_si512(b, a);
    for (int i = 0; i < 16; ++i) asm volatile("" : "+v"(acc[i]));
    for (int i = 0; i < 8; ++i) asm volatile("" : "+v"(f[i]));
    asm volatile("" : "+v"(a), "+v"(b));
  }
  __m512i s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_epi32(s, acc[i]);
  __m512 fs = f[0];
  for (int i = 1; i < 8; ++i) fs = _mm512_add_ps(fs, f[i]);
  return _mm512_reduce_add_epi32(s) + static_cast<int>(_mm512_reduce_add_ps(fs));
}
#endif

// All threads run `loop` at once; operations per second of the median pass.
double rate(ThreadPool& pool, int passes, PeakLoop (*loop)()) {
  if (loop().ops == 0) return 0;
  std::vector<double> rates;
  std::vector<double> sink(pool.size());
  for (int p = 0; p < passes + 1; ++p) {
    std::vector<int64_t> ops(pool.size(), 0);
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(pool.size(), [&](int64_t b, int64_t e, int range) {
      for (int64_t i = b; i < e; ++i) {
        const PeakLoop l = loop();
        sink[range] += l.result;
        ops[range] += l.ops;
      }
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t total = 0;
    for (int64_t o : ops) total += o;
    if (p > 0) rates.push_back(static_cast<double>(total) / s);  // pass 0 warms the units up
  }
  volatile double keep = 0;
  for (double v : sink) keep = keep + v;
  return median_of_passes(rates);
}

}  // namespace

PeakLoop f32_fma_loop() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return {fma_loop(), int64_t{kRounds} * 12 * 16 * 2};
#endif
  return {};
}

PeakLoop int8_vnni_loop() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"))
    return {static_cast<double>(vnni_loop()), int64_t{kRounds} * 12 * 64 * 2};
#endif
  return {};
}

PeakLoop int8_vnni_q4_1_mix_loop() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vnni"))
    return {static_cast<double>(vnni_q4_1_mix_loop()), int64_t{kRounds / 2} * 16 * 64 * 2};
#endif
  return {};
}

ComputePeak measure_compute_peak(ThreadPool& pool, int passes) {
  ComputePeak p;
  p.passes = passes;
  p.f32_flops_per_s = rate(pool, passes, f32_fma_loop);
  p.int8_ops_per_s = rate(pool, passes, int8_vnni_loop);
  return p;
}

}  // namespace kvbench
