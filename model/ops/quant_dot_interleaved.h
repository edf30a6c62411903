// Internal to the interleaved kernels (quant_dot_interleaved_*.cpp): the
// weight formats of the interleaved layout (model/ops/interleave.h) and the
// per-block activation figures the kernels broadcast.
//
// The float order is the legacy chain of quant_dot_scalar.cpp; a lane of a
// vector register is one output (weight row r of a 16-row group, one token).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/ops/quant_dot_kernels.h"

namespace kvbench::qdot::il {

constexpr int kRows = 16;  // rows per group (kInterleaveRows)

// A legacy type in the interleaved layout. Group block b sits at b * kGroupBlock;
// inside it, codes (kChunks x 64 B), the 5th-bit masks (Q5: 4 x 16 B), d[16]
// f16, m[16] f16. Value = code - 2^kShift (kShift < 0: no offset).
template <size_t kRowBlock, int kShiftV, bool kMinV, bool kFiveV, bool kQ8V>
struct Format {
  static constexpr size_t kGroupBlock = kRows * kRowBlock;
  static constexpr int kShift = kShiftV;
  static constexpr bool kMin = kMinV;
  static constexpr bool kFive = kFiveV;
  static constexpr bool kQ8 = kQ8V;
  static constexpr int kChunks = kQ8 ? 8 : 4;
  static constexpr size_t kMasks = kChunks * 64;
  static constexpr size_t kD = kMasks + (kFive ? 64 : 0);
  static constexpr size_t kM = kD + 2 * kRows;
  // Activations: Q8_1 rows (d, s, qs[32]) for the min types, else Q8_0 (d, qs).
  static constexpr size_t kActBlock = kMin ? kQ8_1Bytes : kQ8_0Bytes;
  static constexpr size_t kActQs = kMin ? 4 : 2;
};
using Q4_0F = Format<18, 3, false, false, false>;
using Q4_1F = Format<20, -1, true, false, false>;
using Q5_0F = Format<22, 4, false, true, false>;
using Q5_1F = Format<24, -1, true, true, false>;
using Q8_0F = Format<34, 7, false, false, true>;  // codes stored as q + 128

// Per activation row, per block: d (f32 of the f16), s (Q8_1: f32 of the
// f16 d * sum), and -sum(q) (the offset term: isum starts at -sum << kShift).
// Row t's figures start at t * stride(nb) floats: d[nb], s[nb], negsum[nb].
struct ActFigures {
  std::vector<float> data;
  size_t stride = 0;
  const float* d(int64_t t) const { return data.data() + t * stride; }
  const float* s(int64_t t, int64_t nb) const { return d(t) + nb; }
  const int32_t* negsum(int64_t t, int64_t nb) const {
    return reinterpret_cast<const int32_t*>(d(t) + 2 * nb);
  }
};

// Fills f for n_act activation rows of Q8_0 (min = false) or Q8_1 blocks.
void act_figures(bool min, const uint8_t* act, size_t act_stride, int64_t n_act, int64_t nb,
                 ActFigures& f);

// The same with AVX2 (quant_dot_interleaved_avx2.cpp; x86-64 only): what the
// SIMD kernels call.
void act_figures_avx2(bool min, const uint8_t* act, size_t act_stride, int64_t n_act, int64_t nb,
                      ActFigures& f);

// Per thread, reused: the figures of the current tile call.
ActFigures& figures_buffer();

// GGUF rows [0, rows) (rows <= 16, w_stride apart, n elements each) of a
// legacy type repacked into one interleaved group, padded with zero rows; the
// group lives in a per-thread buffer until the next call.
const uint8_t* repack_group(GgmlType type, const uint8_t* w, size_t w_stride, int rows, int64_t n);

}  // namespace kvbench::qdot::il
