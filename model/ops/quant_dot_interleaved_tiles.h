// The tile entry points of the interleaved kernels, the same on every path.
// quant_dot_interleaved_avx2.cpp and quant_dot_interleaved_avx512.cpp include
// this inside their target regions, after their micro-kernels, which they
// offer under two names (found when the templates below are instantiated):
//   groups<F>(w, group_stride, n_groups, act, act_stride, fig, n_act, nb, out,
//     ldo): n_groups whole groups (group g at w + g * group_stride, outputs
//     out[t * ldo + 16 g + r]);
//   group<F>(grp, act, act_stride, fig, n_act, nb, out, ldo, rows): one group
//     of which the first `rows` rows are stored.
// GGUF rows (no interleaved copy: odd row counts, tests) are repacked 16 at a
// time into a per-thread group and go through the same micro-kernels.
// Internal linkage: each path's instantiations stay in its own object file.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/ops/quant_dot_interleaved.h"

namespace kvbench::qdot::il {
namespace {

// Interleaved rows: n_rows a multiple of 16, group g at w + g * 16 * w_stride.
template <class F>
void interleaved_tile(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
                      size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo) {
  const int64_t nb = n / kQK;
  ActFigures& fig = figures_buffer();
  act_figures_avx2(F::kMin, act, act_stride, n_act, nb, fig);
  groups<F>(w, kRows * w_stride, n_rows / kRows, act, act_stride, fig, n_act, nb, out, ldo);
}

// GGUF rows: each 16 (the last padded with zero rows) repacked, then the same
// micro-kernels.
template <class F, GgmlType kType>
void gguf_tile(const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* act,
               size_t act_stride, int64_t n_act, int64_t n, float* out, int64_t ldo) {
  const int64_t nb = n / kQK;
  ActFigures& fig = figures_buffer();
  act_figures_avx2(F::kMin, act, act_stride, n_act, nb, fig);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, n_rows - r0));
    const uint8_t* grp = repack_group(kType, w + r0 * w_stride, w_stride, rows, n);
    group<F>(grp, act, act_stride, fig, n_act, nb, out + r0, ldo, rows);
  }
}

// The legacy kinds' entries of a path's kernel table.
void fill_tiles(Kernels& k) {
  k.tile[kQ4_0] = gguf_tile<Q4_0F, GgmlType::Q4_0>;
  k.tile[kQ4_1] = gguf_tile<Q4_1F, GgmlType::Q4_1>;
  k.tile[kQ5_0] = gguf_tile<Q5_0F, GgmlType::Q5_0>;
  k.tile[kQ5_1] = gguf_tile<Q5_1F, GgmlType::Q5_1>;
  k.tile[kQ8_0] = gguf_tile<Q8_0F, GgmlType::Q8_0>;
  k.interleaved_tile[kQ4_0] = interleaved_tile<Q4_0F>;
  k.interleaved_tile[kQ4_1] = interleaved_tile<Q4_1F>;
  k.interleaved_tile[kQ5_0] = interleaved_tile<Q5_0F>;
  k.interleaved_tile[kQ5_1] = interleaved_tile<Q5_1F>;
  k.interleaved_tile[kQ8_0] = interleaved_tile<Q8_0F>;
}

}  // namespace
}  // namespace kvbench::qdot::il
