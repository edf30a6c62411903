// Microbenchmarks of the quantized dot kernels and of matmul on SmolLM2's
// matrix shapes (rows x cols; Q4_1 layers, Q8_0 output), decode (1 token) and
// prefill (512 tokens), per instruction-set path. Weights are random (same
// layout and size as the model's), so no model file is needed.
//
//   build-*/tests/kvbench_microbench --benchmark_filter=Decode
//
// Counters: bytes_per_second = weight bytes streamed; items_per_second =
// multiply-adds (dot/decode) or tokens (prefill).
#include <benchmark/benchmark.h>

#include <vector>

#include "model/ops/interleave.h"
#include "model/ops/matmul.h"
#include "model/ops/planar.h"
#include "model/ops/quant_dot.h"
#include "tests/bench/bench_util.h"

namespace kvbench::bench {
namespace {

struct Matrix {
  Bytes bytes;
  WeightMatrix w;
};

Matrix make_matrix(GgmlType t, int64_t rows, int64_t cols) {
  Matrix m;
  m.bytes = random_rows(t, rows, cols);
  m.w = WeightMatrix{t, rows, cols, row_bytes(t, cols), m.bytes.data()};
  return m;
}

// The same matrix with a planar copy (model/ops/planar.h) and, where the type
// has one, an interleaved copy (model/ops/interleave.h), as the model loader
// makes them: exact decode reads the first, the quantized products the second.
struct PlanarMatrix : Matrix {
  Bytes planar, interleaved;
};
PlanarMatrix make_planar(GgmlType t, int64_t rows, int64_t cols) {
  PlanarMatrix m;
  static_cast<Matrix&>(m) = make_matrix(t, rows, cols);
  m.planar = planar_rows(t, m.bytes, rows, cols);
  m.w.planar = m.planar.data();
  if (has_interleaved_layout(t) && rows % kInterleaveRows == 0) {
    m.interleaved = interleaved_rows(t, m.bytes, rows, cols);
    m.w.interleaved = m.interleaved.data();
  }
  return m;
}

// Path argument of the matmul benchmarks: -1 = Exact mode, -2 = Exact mode on
// planar rows, 0..2 = kPaths on GGUF rows, 3 = AVX-512 on the interleaved copy.
CpuPath path_arg(int64_t a) { return a < 0 ? best_cpu_path() : kPaths[a == 3 ? 2 : a]; }
bool planar_arg(int64_t a) { return a == 3 || a == -2; }
std::string path_label(int64_t a, const char* exact) {
  if (a < 0) return std::string(exact) + (a == -2 ? " planar" : "");
  return std::string(cpu_path_name(path_arg(a))) + (a == 3 ? " interleaved" : "");
}

// --- kernels ----------------------------------------------------------------

// 64 weight rows of n elements (768 or 1536: K-quant super-blocks fit both)
// times one activation row: the weights stay in L1/L2, so this is kernel
// speed without the memory system.
void BM_Dot(benchmark::State& state) {
  const GgmlType t = kDotTypes[state.range(0)];
  const CpuPath p = kPaths[state.range(1)];
  if (skip_unsupported(state, p)) return;
  const int64_t n = state.range(2), rows = 64;
  const Matrix m = make_matrix(t, rows, n);
  const auto act = random_activations(t, 1, n, 2);
  std::vector<float> out(rows);
  for (auto _ : state) {
    quant_dot_tile(t, m.w.data, m.w.row_bytes, rows, act.data(), 0, 1, n, out.data(), 1, p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(type_name(t)) + " " + std::string(cpu_path_name(p)));
  state.SetItemsProcessed(state.iterations() * rows * n);
  state.SetBytesProcessed(state.iterations() * rows * m.w.row_bytes);
}
BENCHMARK(BM_Dot)->ArgsProduct({benchmark::CreateDenseRange(0, 12, 1), {0, 1, 2}, {768, 1536}});

void BM_QuantizeActivations(benchmark::State& state) {
  const GgmlType at = std::array{GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}[state.range(0)];
  const CpuPath p = kPaths[state.range(1)];
  if (skip_unsupported(state, p)) return;
  const int64_t n = 1536;
  const auto x = gaussian(n, 1.0f, 3);
  Bytes q(row_bytes(at, n));
  for (auto _ : state) {
    quantize_activations(at, x.data(), q.data(), n, p);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetLabel(std::string(type_name(at)) + " " + std::string(cpu_path_name(p)));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_QuantizeActivations)->ArgsProduct({{0, 1, 2}, {0, 1, 2}});

// --- matmul on SmolLM2's shapes ----------------------------------------------

struct Shape {
  const char* name;
  int64_t rows, cols;
  GgmlType type;
};
const Shape kShapes[] = {
    {"wq/wo 576x576", 576, 576, GgmlType::Q4_1},      {"wk/wv 192x576", 192, 576, GgmlType::Q4_1},
    {"gate/up 1536x576", 1536, 576, GgmlType::Q4_1},  {"down 576x1536", 576, 1536, GgmlType::Q4_1},
    {"output 49152x576", 49152, 576, GgmlType::Q8_0},
};

// Decode: one token. Arguments: shape, path (negative: Exact mode), threads.
void BM_MatmulDecode(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const bool exact = state.range(1) < 0;
  const CpuPath p = path_arg(state.range(1));
  if (skip_unsupported(state, p)) return;
  const PlanarMatrix pm = make_planar(s.type, s.rows, s.cols);
  WeightMatrix w = pm.w;
  if (!planar_arg(state.range(1))) w.planar = w.interleaved = nullptr;
  const auto x = gaussian(s.cols, 1.0f, 4);
  std::vector<float> y(s.rows);
  ThreadPool pool(static_cast<int>(state.range(2)));
  MatmulScratch scratch;
  const MatmulOptions o{exact ? MatmulMode::Exact : MatmulMode::Quantized, p};
  for (auto _ : state) {
    matmul(w, x.data(), 1, y.data(), s.rows, pool, scratch, o);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(s.name) + " " + path_label(state.range(1), "exact") + " t" +
                 std::to_string(state.range(2)));
  state.SetItemsProcessed(state.iterations() * s.rows * s.cols);
  state.SetBytesProcessed(state.iterations() * s.rows * w.row_bytes);
}
BENCHMARK(BM_MatmulDecode)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {-2, -1, 0, 1, 2, 3}, {1, 2}})
    ->UseRealTime();

// Prefill: 512 tokens. Exact = OpenBLAS sgemm on dequantized tiles,
// otherwise the quantized GEMM of the path.
void BM_MatmulPrefill(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const bool exact = state.range(1) < 0;
  const CpuPath p = path_arg(state.range(1));
  if (skip_unsupported(state, p)) return;
  const int64_t n = 512;
  const PlanarMatrix pm = make_planar(s.type, s.rows, s.cols);
  WeightMatrix w = pm.w;
  if (!planar_arg(state.range(1))) w.planar = w.interleaved = nullptr;
  const auto x = gaussian(n * s.cols, 1.0f, 5);
  std::vector<float> y(n * s.rows);
  ThreadPool pool(static_cast<int>(state.range(2)));
  MatmulScratch scratch;
  const MatmulOptions o{exact ? MatmulMode::Exact : MatmulMode::Quantized, p};
  for (auto _ : state) {
    matmul(w, x.data(), n, y.data(), s.rows, pool, scratch, o);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(s.name) + " " + path_label(state.range(1), "exact(sgemm)") + " t" +
                 std::to_string(state.range(2)));
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["GFLOP/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * n * s.rows * s.cols * 1e-9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatmulPrefill)
    ->ArgsProduct({{0, 1, 2, 3}, {-1, 0, 1, 2, 3}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvbench::bench
