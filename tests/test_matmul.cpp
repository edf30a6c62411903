// matmul in both modes: Quantized against a straightforward scalar
// computation (dequantized weights times dequantized 8-bit activations, in
// double), Exact against the f32 definition, determinism (twice, across thread
// counts and instruction-set paths), grouped matrices, and the tiny model's
// forward pass in Quantized mode against the naive reference.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "model/evaluator.h"
#include "model/llama_model.h"
#include "model/ops/exact_dot.h"
#include "model/ops/interleave.h"
#include "model/ops/matmul.h"
#include "model/ops/planar.h"
#include "policies/full_cache.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using test::some_tokens;

// A weight matrix quantized from Gaussian data, owning its bytes.
struct Matrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

Matrix random_matrix(GgmlType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  Matrix m;
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> x(cols);
  const size_t rb = row_bytes(t, cols);
  m.bytes.resize(rows * rb);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : x) v = d(rng) * (1.0f + r % 4);
    quantize_row(t, x.data(), m.bytes.data() + r * rb, cols);
  }
  m.w = WeightMatrix{t, rows, cols, rb, m.bytes.data()};
  return m;
}

std::vector<float> random_input(int64_t n, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n * cols);
  for (auto& v : x) v = d(rng);
  return x;
}

uint16_t get_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

std::vector<float> run(const WeightMatrix& w, const std::vector<float>& x, int64_t n, int threads,
                       const MatmulOptions& o) {
  ThreadPool pool(threads);
  MatmulScratch scratch;
  std::vector<float> y(n * w.rows, -1.0f);
  matmul(w, x.data(), n, y.data(), w.rows, pool, scratch, o);
  return y;
}

const GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F32,  GgmlType::F16,
                           GgmlType::BF16};

int64_t cols_for(GgmlType t) { return traits(t).block_size == 256 ? 512 : 576; }

// y = W x with W dequantized and x quantized then dequantized, summed in
// double: exactly what the quantized kernels compute, up to f32 rounding
// (bounded by 2e-6 of sum |w a|) and, for Q8_1 activations, the f16 rounding
// of the stored block sum s (2^-11 relative on the min term m * s, as ggml).
TEST(Matmul, QuantizedMatchesDequantizedWeightsTimesQuantizedActivations) {
  std::mt19937 rng(10);
  const CpuPath path = best_cpu_path();
  for (GgmlType t : kTypes) {
    const int64_t cols = cols_for(t);
    const Matrix m = random_matrix(t, 37, cols, rng);
    const GgmlType at = *dot_activation_type(t);
    for (int64_t n : {1, 3, 13}) {
      const auto x = random_input(n, cols, rng);
      const auto y = run(m.w, x, n, 2, {MatmulMode::Quantized, path});
      std::vector<float> wf(cols), af(cols);
      std::vector<uint8_t> aq(row_bytes(at, cols));
      for (int64_t tok = 0; tok < n; ++tok) {
        quantize_row(at, x.data() + tok * cols, aq.data(), cols);
        dequantize_row(at, aq.data(), af.data(), cols);
        for (int64_t r = 0; r < m.w.rows; ++r) {
          dequantize_row(t, m.w.row(r), wf.data(), cols);
          double expect = 0.0, mag = 0.0;
          for (int64_t k = 0; k < cols; ++k) {
            expect += static_cast<double>(wf[k]) * af[k];
            mag += std::fabs(static_cast<double>(wf[k]) * af[k]);
          }
          double bound = 2e-6 * mag;
          if (at == GgmlType::Q8_1) {
            for (int64_t b = 0; b < cols / 32; ++b) {
              const float mw = fp16_to_fp32(get_u16(m.w.row(r) + b * traits(t).block_bytes + 2));
              const float sa = fp16_to_fp32(get_u16(aq.data() + b * 36 + 2));
              bound += std::fabs(mw * sa) * std::ldexp(1.0, -10);
            }
          }
          ASSERT_NEAR(y[tok * m.w.rows + r], expect, bound)
              << type_name(t) << " n=" << n << " row " << r;
        }
      }
    }
  }
}

// Exact keeps f32 activations: y matches the f32 definition in double to f32
// accumulation error, for decode (row dots) and prefill (sgemm tiles).
TEST(Matmul, ExactMatchesF32Definition) {
  std::mt19937 rng(11);
  for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::F16}) {
    const int64_t cols = cols_for(t);
    const Matrix m = random_matrix(t, 70, cols, rng);
    for (int64_t n : {1, 20}) {
      const auto x = random_input(n, cols, rng);
      const auto y = run(m.w, x, n, 2, {MatmulMode::Exact, CpuPath::Scalar});
      std::vector<float> wf(cols);
      for (int64_t r = 0; r < m.w.rows; ++r) {
        dequantize_row(t, m.w.row(r), wf.data(), cols);
        for (int64_t tok = 0; tok < n; ++tok) {
          double expect = 0.0, mag = 0.0;
          for (int64_t k = 0; k < cols; ++k) {
            expect += static_cast<double>(wf[k]) * x[tok * cols + k];
            mag += std::fabs(static_cast<double>(wf[k]) * x[tok * cols + k]);
          }
          ASSERT_NEAR(y[tok * m.w.rows + r], expect, 2e-6 * mag) << type_name(t) << " n=" << n;
        }
      }
    }
  }
}

// Same inputs, same thread count: the same bits, in both modes. Quantized
// computes every element with the same operations whatever the split, so its
// bits also agree across thread counts and instruction-set paths.
TEST(Matmul, DeterministicInBothModes) {
  std::mt19937 rng(12);
  const Matrix m = random_matrix(GgmlType::Q4_1, 101, 576, rng);
  for (int64_t n : {1, 5, 40, 300}) {
    const auto x = random_input(n, 576, rng);
    const size_t bytes = n * 101 * sizeof(float);
    for (MatmulMode mode : {MatmulMode::Exact, MatmulMode::Quantized}) {
      const MatmulOptions o{mode, best_cpu_path()};
      EXPECT_EQ(0, std::memcmp(run(m.w, x, n, 2, o).data(), run(m.w, x, n, 2, o).data(), bytes))
          << "n=" << n << " mode " << static_cast<int>(mode);
    }
    // Exact mode: the same bits whatever the thread count (sgemm tiles follow
    // the thread count; each output's sum does not).
    const auto exact_ref = run(m.w, x, n, 1, {MatmulMode::Exact, best_cpu_path()});
    for (int threads : {2, 3}) {
      EXPECT_EQ(0, std::memcmp(exact_ref.data(),
                               run(m.w, x, n, threads, {MatmulMode::Exact, best_cpu_path()}).data(),
                               bytes))
          << "n=" << n << " exact, threads " << threads;
    }
    const auto ref = run(m.w, x, n, 1, {MatmulMode::Quantized, CpuPath::Scalar});
    for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
      if (!cpu_path_supported(p)) continue;
      for (int threads : {1, 2, 3}) {
        EXPECT_EQ(0, std::memcmp(ref.data(),
                                 run(m.w, x, n, threads, {MatmulMode::Quantized, p}).data(), bytes))
            << "n=" << n << " " << cpu_path_name(p) << " threads " << threads;
      }
    }
  }
}

// A group (one quantization of x, one parallel region) gives the same bits as
// separate calls, also with mixed weight types (two activation types).
TEST(Matmul, GroupEqualsSeparateCalls) {
  std::mt19937 rng(13);
  const Matrix a = random_matrix(GgmlType::Q4_1, 64, 576, rng);
  const Matrix b = random_matrix(GgmlType::Q8_0, 24, 576, rng);
  const Matrix c = random_matrix(GgmlType::Q4_1, 24, 576, rng);
  const Matrix d = random_matrix(GgmlType::F16, 9, 576, rng);
  for (int64_t n : {1, 17}) {
    const auto x = random_input(n, 576, rng);
    const MatmulOptions o{MatmulMode::Quantized, best_cpu_path()};
    ThreadPool pool(2);
    MatmulScratch scratch;
    std::vector<float> ya(n * 64), yb(n * 30, 0.0f), yc(n * 24), yd(n * 9);
    const MatmulOutput outs[] = {
        {&a.w, ya.data(), 64}, {&b.w, yb.data(), 30}, {&c.w, yc.data(), 24}, {&d.w, yd.data(), 9}};
    matmul_group(outs, x.data(), n, pool, scratch, o);
    EXPECT_EQ(0, std::memcmp(ya.data(), run(a.w, x, n, 2, o).data(), ya.size() * 4));
    EXPECT_EQ(0, std::memcmp(yc.data(), run(c.w, x, n, 2, o).data(), yc.size() * 4));
    EXPECT_EQ(0, std::memcmp(yd.data(), run(d.w, x, n, 2, o).data(), yd.size() * 4));
    const auto sep = run(b.w, x, n, 2, o);
    for (int64_t t = 0; t < n; ++t) {
      EXPECT_EQ(0, std::memcmp(yb.data() + t * 30, sep.data() + t * 24, 24 * 4));
      for (int r = 24; r < 30; ++r) EXPECT_EQ(yb[t * 30 + r], 0.0f) << "wrote past W.rows";
    }
  }
}

// A matrix with a planar copy (model/ops/planar.h) and, where its rows are a
// multiple of 16, an interleaved copy (model/ops/interleave.h) gives the same
// bits as without them, on every path (those without such kernels ignore the
// copies), in both modes, for decode and prefill shapes and both thread
// counts.
TEST(Matmul, PlanarAndInterleavedCopiesGiveTheSameBits) {
  std::mt19937 rng(14);
  for (GgmlType t :
       {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0}) {
    for (int64_t rows : {75, 80}) {
      for (int64_t cols : {96, 576}) {
        const Matrix m = random_matrix(t, rows, cols, rng);
        std::vector<uint8_t> planar(m.bytes.size()), interleaved(m.bytes.size());
        for (int64_t r = 0; r < m.w.rows; ++r)
          to_planar_row(t, m.w.row(r), planar.data() + r * m.w.row_bytes, cols);
        WeightMatrix with = m.w;
        with.planar = planar.data();
        if (rows % kInterleaveRows == 0) {
          const size_t group = kInterleaveRows * m.w.row_bytes;
          for (int64_t g = 0; g < rows / kInterleaveRows; ++g)
            to_interleaved(t, m.w.row(g * kInterleaveRows), m.w.row_bytes,
                           interleaved.data() + g * group, cols);
          with.interleaved = interleaved.data();
        }
        for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512}) {
          if (!cpu_path_supported(p)) continue;
          for (MatmulMode mode : {MatmulMode::Quantized, MatmulMode::Exact}) {
            const MatmulOptions o{mode, p};
            for (int64_t n : {1, 2, 13}) {
              const auto x = random_input(n, cols, rng);
              for (int threads : {1, 2}) {
                EXPECT_EQ(0, std::memcmp(run(m.w, x, n, threads, o).data(),
                                         run(with, x, n, threads, o).data(), n * m.w.rows * 4))
                    << type_name(t) << " rows " << rows << " cols " << cols << " "
                    << cpu_path_name(p) << (mode == MatmulMode::Exact ? " exact" : " quantized")
                    << " n " << n << " t" << threads;
              }
            }
          }
        }
      }
    }
  }
}

// The loader gives the matrices a planar copy where exact decode has a planar
// kernel and an interleaved copy where the quantized products have an
// interleaved kernel (rows a multiple of 16), each holding exactly the file's
// rows; KVBENCH_PLANAR=0 turns both off.
TEST(Matmul, LoaderAddsPlanarAndInterleavedCopiesUnlessTurnedOff) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const CpuPath path = default_cpu_path();
  int planar = 0, interleaved = 0;
  auto check = [&](const WeightMatrix& w) {
    ASSERT_EQ(w.planar != nullptr,
              has_planar_layout(w.type) && has_exact_planar_kernel(w.type, path))
        << type_name(w.type);
    ASSERT_EQ(w.interleaved != nullptr,
              has_interleaved_kernel(w.type, path) && w.rows % kInterleaveRows == 0)
        << type_name(w.type);
    std::vector<uint8_t> back(w.row_bytes * kInterleaveRows);
    if (w.planar != nullptr) {
      ++planar;
      for (int64_t r = 0; r < w.rows; r += 7) {
        from_planar_row(w.type, w.planar + r * w.row_bytes, back.data(), w.cols);
        ASSERT_EQ(0, std::memcmp(back.data(), w.row(r), w.row_bytes))
            << type_name(w.type) << " row " << r;
      }
    }
    if (w.interleaved != nullptr) {
      ++interleaved;
      const size_t group = kInterleaveRows * w.row_bytes;
      for (int64_t g = 0; g < w.rows / kInterleaveRows; g += 3) {
        from_interleaved(w.type, w.interleaved + g * group, back.data(), w.row_bytes, w.cols);
        ASSERT_EQ(0, std::memcmp(back.data(), w.row(g * kInterleaveRows), group))
            << type_name(w.type) << " group " << g;
      }
    }
  };
  for (const LayerWeights& L : model->weights().layers)
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      check(*w);
  check(model->weights().output);
  if (!has_interleaved_kernel(GgmlType::Q4_1, path))
    GTEST_SKIP() << "no interleaved kernel on " << cpu_path_name(path);
  EXPECT_GT(interleaved, 0);
  if (has_exact_planar_kernel(GgmlType::Q4_1, path)) EXPECT_GT(planar, 0);

  const char* old = std::getenv("KVBENCH_PLANAR");
  const std::string saved = old ? old : "";
  setenv("KVBENCH_PLANAR", "0", 1);
  auto plain = LlamaModel::load(test::tiny_model_path());
  if (old) {
    setenv("KVBENCH_PLANAR", saved.c_str(), 1);
  } else {
    unsetenv("KVBENCH_PLANAR");
  }
  for (const LayerWeights& L : plain->weights().layers) {
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      EXPECT_EQ(w->planar, nullptr);
      EXPECT_EQ(w->interleaved, nullptr);
    }
  }
  EXPECT_EQ(plain->weights().output.planar, nullptr);
  EXPECT_EQ(plain->weights().output.interleaved, nullptr);
}

// --- the thread pool -----------------------------------------------------------

// Static contiguous ranges: thread i always gets [n*i/T, n*(i+1)/T).
TEST(ThreadPoolSplit, RangesAreStaticContiguousAndCoverOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 5, 7, 100}) {
      std::vector<int> seen(n, 0);
      std::vector<std::pair<int64_t, int64_t>> range(threads, {-1, -1});
      pool.parallel_for(n, [&](int64_t b, int64_t e, int t) {
        range[t] = {b, e};
        for (int64_t i = b; i < e; ++i) ++seen[i];
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " threads=" << threads;
      if (n >= threads && n > 1) {
        for (int t = 0; t < threads; ++t) {
          EXPECT_EQ(range[t].first, n * t / threads);
          EXPECT_EQ(range[t].second, n * (t + 1) / threads);
        }
      }
    }
  }
}

// Many short regions back to back (the decode pattern), then regions after
// the workers have gone to sleep: every region runs every range exactly once.
TEST(ThreadPoolSplit, ManyShortRegionsAndWakeUpAfterSleep) {
  ThreadPool pool(3);
  std::vector<int64_t> counts(3, 0);
  int64_t total = 0;
  for (int region = 0; region < 20000; ++region) {
    std::array<int64_t, 3> part{};
    pool.parallel_for(3, [&](int64_t b, int64_t e, int t) { part[t] += e - b; });
    for (int t = 0; t < 3; ++t) counts[t] += part[t];
    total += part[0] + part[1] + part[2];
  }
  EXPECT_EQ(total, 60000);
  for (int t = 0; t < 3; ++t) EXPECT_EQ(counts[t], 20000) << "thread " << t;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // workers block
  for (int region = 0; region < 3; ++region) {
    std::array<int, 3> ran{};
    pool.parallel_for(3, [&](int64_t, int64_t, int t) { ran[t] = 1; });
    EXPECT_EQ(ran[0] + ran[1] + ran[2], 3);
  }
}

// --- the tiny model in Quantized mode ---------------------------------------

std::vector<float> forward_all(const LlamaModel& m, const std::vector<int32_t>& tokens,
                               MatmulMode mode, int threads,
                               std::optional<CpuPath> matmul_path = std::nullopt) {
  Evaluator eval(m, threads, mode);
  if (matmul_path) eval.set_matmul_path(*matmul_path);
  FullCache cache(m.kv_shape());
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> logits(tokens.size() * m.config().n_vocab);
  eval.step(tokens, pos, 0, StepPhase::Prefill, cache, Logits::All, logits.data());
  return logits;
}

// 8-bit activations on the tiny model (3 layers, rows of 96 = 3 blocks,
// random weights of 13 types, logits of RMS 3-10) move the logits by an RMS
// of 3.5-3.7% of the logits' RMS against the naive f32 reference, max 1.87
// (bpe; logits span -39..39) and 0.55 (spm; -13..11): measured, asserted with
// margin. The Exact path stays within 1e-3 (test_model.cpp asserts that too).
// The quantization itself is checked exactly in the matmul tests above.
TEST(TinyModelQuantized, ForwardWithinBoundOfNaiveReference) {
  for (auto [spm, tied] : {std::pair{false, true}, std::pair{true, false}}) {
    auto model = LlamaModel::load(test::tiny_model_path(spm, tied));
    const auto tokens = some_tokens(40, model->config().n_vocab, 7);
    std::vector<int64_t> at(tokens.size());
    std::iota(at.begin(), at.end(), 0);
    const auto ref = test::ReferenceLlama(*model).logits(tokens, at);
    const auto quant = forward_all(*model, tokens, MatmulMode::Quantized, 2);
    const auto exact = forward_all(*model, tokens, MatmulMode::Exact, 2);
    double err2 = 0.0, ref2 = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err2 += static_cast<double>(quant[i] - ref[i]) * (quant[i] - ref[i]);
      ref2 += static_cast<double>(ref[i]) * ref[i];
    }
    const double rel_rms = std::sqrt(err2 / ref2);
    const float dq = test::max_abs_diff(quant.data(), ref.data(), ref.size());
    const float de = test::max_abs_diff(exact.data(), ref.data(), ref.size());
    std::printf(
        "tiny model (%s): Quantized vs naive reference: max |diff| %.4f, RMS %.2f%% of the logits' "
        "RMS; "
        "Exact max |diff| %.2g\n",
        spm ? "spm" : "bpe", dq, 100.0 * rel_rms, de);
    RecordProperty(spm ? "quantized_rel_rms_spm" : "quantized_rel_rms_bpe",
                   std::to_string(rel_rms));
    EXPECT_LT(rel_rms, 0.06);
    EXPECT_LT(dq, 3.0f);
    EXPECT_LE(de, 1e-3f);
    const auto again = forward_all(*model, tokens, MatmulMode::Quantized, 2);
    EXPECT_EQ(0, std::memcmp(quant.data(), again.data(), quant.size() * 4));
  }
}

// The whole forward pass with the matmuls on each instruction-set path (the
// attention kernels on the default path): bit-identical logits, prefill and
// decode. (Whole-model outputs under KVBENCH_CPU=scalar also switch the
// attention kernels, whose scalar path is not bit-identical to its SIMD
// paths; 8-bit activations amplify such ulps, see test_golden_llamacpp.cpp.)
TEST(TinyModelQuantized, MatmulPathsGiveBitIdenticalLogits) {
  auto model = LlamaModel::load(test::tiny_model_path());
  const auto tokens = some_tokens(37, model->config().n_vocab, 3);
  const auto ref = forward_all(*model, tokens, MatmulMode::Quantized, 2, CpuPath::Scalar);
  for (CpuPath p : {CpuPath::Avx2, CpuPath::Avx512}) {
    if (!cpu_path_supported(p)) continue;
    const auto got = forward_all(*model, tokens, MatmulMode::Quantized, 2, p);
    EXPECT_EQ(0, std::memcmp(ref.data(), got.data(), ref.size() * 4)) << cpu_path_name(p);
  }
}

// Batched decoding (several sequences' tokens as the rows of one step) is
// equal to decoding each alone only if a row's outputs do not depend on the
// other rows: each row of an n-row product, with and without the planar and
// interleaved copies, has the bits of the same row multiplied alone; in
// Exact mode with row_wise (its GEMM, for 8 rows or more, sums in another
// order, and is checked to differ so the option is seen to matter).
TEST(Matmul, EachRowHasTheBitsOfItsRowAlone) {
  std::mt19937 rng(15);
  for (GgmlType t : kTypes) {
    const int64_t cols = cols_for(t), rows = 80;
    const Matrix m = random_matrix(t, rows, cols, rng);
    std::vector<uint8_t> planar(m.bytes.size()), interleaved(m.bytes.size());
    WeightMatrix with = m.w;
    const bool copies = t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 ||
                        t == GgmlType::Q5_1 || t == GgmlType::Q8_0;
    if (copies) {
      for (int64_t r = 0; r < rows; ++r)
        to_planar_row(t, m.w.row(r), planar.data() + r * m.w.row_bytes, cols);
      const size_t group = kInterleaveRows * m.w.row_bytes;
      for (int64_t g = 0; g < rows / kInterleaveRows; ++g)
        to_interleaved(t, m.w.row(g * kInterleaveRows), m.w.row_bytes,
                       interleaved.data() + g * group, cols);
      with.planar = planar.data();
      with.interleaved = interleaved.data();
    }
    for (const WeightMatrix* w : {&m.w, static_cast<const WeightMatrix*>(&with)}) {
      for (MatmulMode mode : {MatmulMode::Quantized, MatmulMode::Exact}) {
        MatmulOptions o{mode, best_cpu_path()};
        o.row_wise = true;
        for (int64_t n : {2, 8, 32}) {
          const auto x = random_input(n, cols, rng);
          const auto all = run(*w, x, n, 2, o);
          for (int64_t r = 0; r < n; ++r) {
            const std::vector<float> one(x.begin() + r * cols, x.begin() + (r + 1) * cols);
            EXPECT_EQ(0, std::memcmp(all.data() + r * rows, run(*w, one, 1, 2, o).data(), rows * 4))
                << type_name(t) << (w == &with ? " with copies" : "")
                << (mode == MatmulMode::Exact ? " exact" : " quantized") << " n " << n << " row "
                << r;
          }
        }
      }
    }
  }
  // Without row_wise, Exact mode's GEMM rows differ from the row alone.
  const Matrix m = random_matrix(GgmlType::Q4_1, 80, 576, rng);
  const auto x = random_input(8, 576, rng);
  const MatmulOptions gemm{MatmulMode::Exact, best_cpu_path()};
  const std::vector<float> first(x.begin(), x.begin() + 576);
  EXPECT_NE(
      0, std::memcmp(run(m.w, x, 8, 2, gemm).data(), run(m.w, first, 1, 2, gemm).data(), 80 * 4));
}

}  // namespace
}  // namespace kvbench
