// The instruction-set paths' entry points where they are not compiled: off
// x86-64 every *_avx2.cpp / *_avx512*.cpp file is empty, and these stand in
// for it (no kernel table, no kernel, nothing done), so that the dispatchers
// keep to the scalar code.
#if !defined(__x86_64__)

#include "model/ops/attention_kernels.h"
#include "model/ops/exact_dot.h"
#include "model/ops/exact_gemm.h"
#include "model/ops/quant_dot_kernels.h"
#include "model/ops/silu_kernels.h"

namespace kvbench::qdot {
const Kernels* avx2_kernels() { return nullptr; }
const Kernels* avx512_kernels() { return nullptr; }
TileFn kquant_avx512_tile(int) { return nullptr; }
}  // namespace kvbench::qdot

namespace kvbench::qdot::il {
void interleaved_avx2_kernels(Kernels&) {}
void interleaved_avx512_kernels(Kernels&) {}
}  // namespace kvbench::qdot::il

namespace kvbench::exact {
const Kernels* avx2_kernels() { return nullptr; }
const Kernels* avx512_kernels() { return nullptr; }
GemmPanelsFn avx2_gemm_panels() { return nullptr; }
GemmPanelsFn avx512_gemm_panels() { return nullptr; }
}  // namespace kvbench::exact

namespace kvbench::silu {
int64_t silu_mul_avx2(float*, const float*, int64_t) { return 0; }
int64_t expf_avx2(const float*, float*, int64_t) { return 0; }
int64_t silu_mul_avx512(float*, const float*, int64_t) { return 0; }
int64_t expf_avx512(const float*, float*, int64_t) { return 0; }
}  // namespace kvbench::silu

namespace kvbench::attn {
const Kernels* avx2_kernels() { return nullptr; }
const Kernels* avx512_kernels() { return nullptr; }
const Kernels* avx512_bf16_kernels() { return nullptr; }
bool cpu_has_avx512_bf16() { return false; }
void bf16_native_pack_keys(const Rows&, int, int32_t, int32_t, float*) {}
void bf16_native_prefill_tile(const PrefillTile&, const PrefillWork&) {}
}  // namespace kvbench::attn

#endif  // not x86-64
