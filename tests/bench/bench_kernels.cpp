// Microbenchmarks of the per-path kernels bench_matmul.cpp does not reach on
// every path: the SwiGLU gate and its expf, the exact path's products (decode
// tiles, row decoding, the prefill GEMM on packed panels) and the quantized
// products on interleaved groups and on tiles of several activations. Each
// runs on one thread with data in L1/L2 (kernel speed, not the memory
// system); the Path argument is 0 scalar, 1 avx2, 2 avx512.
//
//   build/tests/kvbench_microbench --benchmark_filter='Silu|Expf|Exact|Interleaved|DotTile'
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "model/ops/exact_dot.h"
#include "model/ops/exact_gemm.h"
#include "model/ops/interleave.h"
#include "model/ops/planar.h"
#include "model/ops/quant_dot.h"
#include "model/ops/silu.h"
#include "tests/bench/bench_util.h"

namespace kvbench::bench {
namespace {

std::string label(GgmlType t, CpuPath p) {
  return std::string(type_name(t)) + " " + std::string(cpu_path_name(p));
}

// --- SwiGLU ------------------------------------------------------------------

// One SmolLM2 prefill chunk's gate: 64 tokens x ffn 1536. Args: path.
void BM_SiluMul(benchmark::State& state) {
  const CpuPath p = kPaths[state.range(0)];
  if (skip_unsupported(state, p)) return;
  const int64_t n = 64 * 1536;
  const auto gate0 = gaussian(n, 2.0f, 11), up = gaussian(n, 1.0f, 12);
  std::vector<float> gate = gate0;
  for (auto _ : state) {
    state.PauseTiming();
    gate = gate0;
    state.ResumeTiming();
    silu_mul(gate.data(), up.data(), n, p);
    benchmark::DoNotOptimize(gate.data());
  }
  state.SetLabel(std::string(cpu_path_name(p)));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SiluMul)->DenseRange(0, 2);

void BM_Expf(benchmark::State& state) {
  const CpuPath p = kPaths[state.range(0)];
  if (skip_unsupported(state, p)) return;
  const int64_t n = 16384;
  const auto x = gaussian(n, 4.0f, 13);
  std::vector<float> out(n);
  for (auto _ : state) {
    expf_rows(x.data(), out.data(), n, p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(cpu_path_name(p)));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Expf)->DenseRange(0, 2);

// --- the exact path ------------------------------------------------------------

const GgmlType kExactTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                GgmlType::F32,  GgmlType::F16,  GgmlType::BF16};

// 64 rows of 768 times n_x tokens. Args: type, path, n_x.
void BM_ExactDot(benchmark::State& state) {
  const GgmlType t = kExactTypes[state.range(0)];
  const CpuPath p = kPaths[state.range(1)];
  if (skip_unsupported(state, p)) return;
  const int64_t rows = 64, n = 768, n_x = state.range(2);
  const auto w = random_rows(t, rows, n);
  const auto x = gaussian(n_x * n, 1.0f, 14);
  std::vector<float> out(n_x * rows);
  for (auto _ : state) {
    exact_dot_tile(t, w.data(), row_bytes(t, n), rows, x.data(), n, n_x, n, out.data(), rows, p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(label(t, p) + " x" + std::to_string(n_x));
  state.SetItemsProcessed(state.iterations() * rows * n * n_x);
}
BENCHMARK(BM_ExactDot)->ArgsProduct({benchmark::CreateDenseRange(0, 10, 1), {1, 2}, {1, 4}});

// The same on planar rows (Q4_0, Q4_1, Q8_0: the types with a planar kernel).
void BM_ExactDotPlanar(benchmark::State& state) {
  const GgmlType t = kExactTypes[state.range(0)];
  const CpuPath p = kPaths[state.range(1)];
  if (skip_unsupported(state, p)) return;
  const int64_t rows = 64, n = 768, n_x = state.range(2);
  const size_t rb = row_bytes(t, n);
  const auto planar = planar_rows(t, random_rows(t, rows, n), rows, n);
  const auto x = gaussian(n_x * n, 1.0f, 14);
  std::vector<float> out(n_x * rows);
  for (auto _ : state) {
    exact_dot_tile_planar(t, planar.data(), rb, rows, x.data(), n, n_x, n, out.data(), rows, p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(label(t, p) + " planar x" + std::to_string(n_x));
  state.SetItemsProcessed(state.iterations() * rows * n * n_x);
}
BENCHMARK(BM_ExactDotPlanar)->ArgsProduct({{0, 1, 4}, {1, 2}, {1, 4}});

// One row of 4096 decoded to f32. Args: type, path.
void BM_DequantizeRow(benchmark::State& state) {
  const GgmlType t = kExactTypes[state.range(0)];
  const CpuPath p = kPaths[state.range(1)];
  if (skip_unsupported(state, p)) return;
  const int64_t n = 4096;
  const auto w = random_rows(t, 1, n);
  std::vector<float> out(n);
  for (auto _ : state) {
    dequantize_row_fast(t, w.data(), out.data(), n, p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(label(t, p));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DequantizeRow)->ArgsProduct({benchmark::CreateDenseRange(0, 10, 1), {1, 2}});

// Exact prefill's GEMM: one tile of 96 rows x 576 columns (packed panels)
// times 512 tokens. Args: path.
void BM_ExactGemm(benchmark::State& state) {
  const CpuPath p = kPaths[state.range(0)];
  if (skip_unsupported(state, p)) return;
  const int64_t rows = 96, k = 576, tokens = 512;
  const auto w = gaussian(rows * k, 0.05f, 15), x = gaussian(tokens * k, 1.0f, 16);
  std::vector<float> panels(exact_gemm_panel_floats(rows, k)), y(tokens * rows);
  exact_gemm_pack(w.data(), k, rows, k, panels.data());
  for (auto _ : state) {
    exact_gemm_panels(panels.data(), rows, x.data(), k, tokens, k, y.data(), rows, p);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(cpu_path_name(p)));
  state.counters["GFLOP/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * rows * k * tokens * 1e-9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ExactGemm)->DenseRange(1, 2);

// --- quantized products ----------------------------------------------------------

const GgmlType kLegacyTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                 GgmlType::Q8_0};

// 64 rows of 768 (four interleaved groups) times n_act activations. Args:
// type, path, n_act.
void BM_DotInterleaved(benchmark::State& state) {
  const GgmlType t = kLegacyTypes[state.range(0)];
  const CpuPath p = kPaths[state.range(1)];
  if (skip_unsupported(state, p)) return;
  const int64_t rows = 64, n = 768, n_act = state.range(2);
  const size_t rb = row_bytes(t, n);
  const auto il = interleaved_rows(t, random_rows(t, rows, n), rows, n);
  const size_t ab = row_bytes(*dot_activation_type(t), n);
  const auto act = random_activations(t, n_act, n, 17);
  std::vector<float> out(n_act * rows);
  for (auto _ : state) {
    quant_dot_tile_interleaved(t, il.data(), rb, rows, act.data(), ab, n_act, n, out.data(), rows,
                               p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(label(t, p) + " x" + std::to_string(n_act));
  state.SetItemsProcessed(state.iterations() * rows * n * n_act);
}
BENCHMARK(BM_DotInterleaved)->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}, {1, 8}});

// GGUF rows: 64 rows of 768 times 8 activations (the prefill tiles; BM_Dot
// has one activation). Args: type, path.
void BM_DotTile(benchmark::State& state) {
  const GgmlType t = kDotTypes[state.range(0)];
  const CpuPath p = kPaths[state.range(1)];
  if (skip_unsupported(state, p)) return;
  const int64_t rows = 64, n = 768, n_act = 8;
  const auto w = random_rows(t, rows, n);
  const size_t ab = row_bytes(*dot_activation_type(t), n);
  const auto act = random_activations(t, n_act, n, 18);
  std::vector<float> out(n_act * rows);
  for (auto _ : state) {
    quant_dot_tile(t, w.data(), row_bytes(t, n), rows, act.data(), ab, n_act, n, out.data(), rows,
                   p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(label(t, p) + " x8");
  state.SetItemsProcessed(state.iterations() * rows * n * n_act);
}
BENCHMARK(BM_DotTile)->ArgsProduct({benchmark::CreateDenseRange(0, 12, 1), {1, 2}});

}  // namespace
}  // namespace kvbench::bench
