#include "model/ops/quant_dot_interleaved.h"

#include <cstring>

#include "model/gguf/ggml_types.h"
#include "model/ops/interleave.h"

namespace kvbench::qdot::il {

void act_figures(bool min, const uint8_t* act, size_t act_stride, int64_t n_act, int64_t nb,
                 ActFigures& f) {
  const size_t block = min ? kQ8_1Bytes : kQ8_0Bytes;
  const size_t qs = min ? 4 : 2;
  f.stride = (static_cast<size_t>(3 * nb) + 15) / 16 * 16;  // 64-byte rows
  if (f.data.size() < f.stride * static_cast<size_t>(n_act)) f.data.resize(f.stride * n_act);
  for (int64_t t = 0; t < n_act; ++t) {
    const uint8_t* row = act + t * act_stride;
    float* d = f.data.data() + t * f.stride;
    float* s = d + nb;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + b * block;
      uint16_t h;
      std::memcpy(&h, blk, 2);
      d[b] = fp16_to_fp32(h);
      if (min) {
        std::memcpy(&h, blk + 2, 2);
        s[b] = fp16_to_fp32(h);
      } else {
        s[b] = 0.0f;
      }
      int32_t sum = 0;
      for (int k = 0; k < kQK; ++k) sum += static_cast<int8_t>(blk[qs + k]);
      const int32_t neg = -sum;
      std::memcpy(d + 2 * nb + b, &neg, 4);
    }
  }
}

ActFigures& figures_buffer() {
  thread_local ActFigures f;
  return f;
}

const uint8_t* repack_group(GgmlType type, const uint8_t* w, size_t w_stride, int rows, int64_t n) {
  const size_t row_bytes = kvbench::row_bytes(type, n);
  thread_local std::vector<uint8_t> buf;
  buf.resize(2 * kRows * row_bytes);
  uint8_t* grp = buf.data();
  if (rows < kRows) {  // copy to zero-padded rows first
    uint8_t* pad = grp + kRows * row_bytes;
    std::memset(pad, 0, kRows * row_bytes);
    for (int r = 0; r < rows; ++r) std::memcpy(pad + r * row_bytes, w + r * w_stride, row_bytes);
    w = pad;
    w_stride = row_bytes;
  }
  to_interleaved(type, w, w_stride, grp, n);
  return grp;
}

}  // namespace kvbench::qdot::il
