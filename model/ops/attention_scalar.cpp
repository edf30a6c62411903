// The reference path of the attention kernels: the shared algorithm
// (attention_impl.h) over one-float "vectors", exp2 from the C library. The
// SIMD paths are tested against it; it is also the fallback on CPUs without
// AVX2 and for head sizes the SIMD paths do not cover.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "model/gguf/ggml_types.h"
#include "model/ops/attention_kernels.h"

namespace kvbench::attn {
namespace {

struct Scalar {
  using V = float;
  static constexpr int W = 1;
  static constexpr int kRegs = 16;
  static constexpr int kGemmCols = 4;
  static V zero() { return 0.0f; }
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V load_f16(const uint16_t* p) { return fp16_to_fp32(*p); }
  static V load_bf16(const uint16_t* p) {
    const uint32_t b = static_cast<uint32_t>(*p) << 16;
    float x;
    std::memcpy(&x, &b, 4);
    return x;
  }
  static V load_i8(const int8_t* p) { return static_cast<float>(*p); }
  static V load_i32(const int32_t* p) { return static_cast<float>(*p); }
  static V load_u4(const uint8_t* codes, int d) {
    return static_cast<float>((codes[d / 2] >> (4 * (d & 1))) & 15);
  }
  static void load_u4_pair(const uint8_t* codes, int d, V& lo, V& hi) {
    lo = static_cast<float>(codes[d / 2] & 15);
    hi = static_cast<float>(codes[d / 2] >> 4);
  }
  static V load_u2(const uint8_t* codes, int d) {
    return static_cast<float>((codes[d / 4] >> (2 * (d & 3))) & 3);
  }
  static void halves(const uint16_t* h, int n, float* out) {
    for (int i = 0; i < n; ++i) out[i] = fp16_to_fp32(h[i]);
  }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V max(V a, V b) { return a > b ? a : b; }
  static float hsum(V v) { return v; }
  static float hmax(V v) { return v; }
  static void hsum4(const V* a, float* out) {
    for (int i = 0; i < 4; ++i) out[i] = a[i];
  }
  static V exp2(V x) { return x < -126.0f ? 0.0f : std::exp2(x); }
  static V round_bf16(V x) { return bf16_round(x); }
};

}  // namespace
}  // namespace kvbench::attn

#include "model/ops/attention_impl.h"

namespace kvbench::attn {

namespace {
constexpr Kernels kScalarKernels = make_kernels<Scalar>();
}  // namespace

const Kernels* scalar_kernels() { return &kScalarKernels; }

}  // namespace kvbench::attn
