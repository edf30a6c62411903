// AVX-512 path of the attention kernels: the shared algorithm
// (attention_impl.h) over 16-float vectors, f16 rows converted in registers,
// exp2 by a degree-7 polynomial and vscalefps (relative error ~2e-7 against
// std::exp2), vpdpbusd for the int8-query scores (attention_q8.h). Uses
// AVX-512 F/BW/DQ/VL/VNNI: it runs where the project's Avx512 path (CpuPath,
// model/ops/quant_dot.h) is supported.
#include "model/ops/attention_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

// Standard headers before the target attribute: their functions must stay
// plain (baseline) code, shared with every other file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "model/ops/simd_target.h"

KVBENCH_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

#include "model/ops/attention_avx512_iface.h"

#include "model/ops/attention_impl.h"

namespace kvbench::attn {
namespace {
constexpr Kernels kAvx512Kernels = make_kernels<Avx512>();
}  // namespace
}  // namespace kvbench::attn

KVBENCH_TARGET_END()

namespace kvbench::attn {
const Kernels* avx512_kernels() { return &kAvx512Kernels; }
const Kernels* avx512_bf16_kernels() {
  static const Kernels native = [] {
    Kernels k = kAvx512Kernels;
    k.pack_keys_bf16 = bf16_native_pack_keys;
    k.prefill_tile_bf16 = bf16_native_prefill_tile;
    return k;
  }();
  static const bool supported = cpu_has_avx512_bf16();
  return supported ? &native : nullptr;
}
}  // namespace kvbench::attn

#endif  // x86-64
