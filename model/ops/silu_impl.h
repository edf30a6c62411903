// The SIMD kernels of silu.h, written once over a small vector interface and
// instantiated by silu_avx2.cpp and silu_avx512.cpp inside their target
// regions: glibc's expf in double lanes (see silu_kernels.h), then the gate's
// float steps as the scalar loop does them. The operation order mirrors the
// library's FMA build exactly:
//   kds = fma(N/ln2, xd, shift); kd = kds - shift; r = fma(N/ln2, xd, -kd)
//   s = bits(tab[k % 32] + (k << 47)); z = fma(r, C0, C1); r2 = r * r
//   y = fma(r, C2, 1); y = fma(z, r2, y); exp = float(y * s)
// Everything here has internal linkage, so each path's instantiations stay in
// its own object file. (Nothing is declared inline: the compiler's inlining
// choices stay those of the hand-written kernels this replaced.)
//
// The vector interface `I`:
//   F32, F64, I64: the path's basics (simd_avx2.h, simd_avx512.h): W floats,
//     W / 2 doubles, W / 2 64-bit integers
//   table(I64::V idx) = the kTab entries idx (0..31)
//   special(F32::V) -> bit i set where lane i's bits >> 20 & 0x7ff exceed
//     kMaxTop
#pragma once

#include <cmath>
#include <cstdint>

#include "model/ops/silu_kernels.h"

namespace kvbench::silu {
namespace {

float scalar_exp(float x) { return std::exp(x); }

// W / 2 floats widened to double -> W / 2 expf values.
template <class I>
typename I::F32::Half exp_half(typename I::F32::Half x) {
  using D = typename I::F64;
  using L = typename I::I64;
  const typename D::V xd = D::widen(x);
  const typename D::V inv = D::set1(kInvLn2N), shift = D::set1(kShift);
  const typename D::V kds = D::fmadd(inv, xd, shift);
  const typename L::V ki = D::bits(kds);
  const typename D::V kd = D::sub(kds, shift);
  const typename D::V r = D::fmsub(inv, xd, kd);
  typename L::V t = I::table(L::and_(ki, L::set1(31)));
  t = L::add(t, L::template shl<47>(ki));
  const typename D::V s = D::from_bits(t);
  const typename D::V z = D::fmadd(r, D::set1(kC0), D::set1(kC1));
  const typename D::V r2 = D::mul(r, r);
  typename D::V y = D::fmadd(r, D::set1(kC2), D::set1(1.0));
  y = D::fmadd(z, r2, y);
  return D::narrow(D::mul(y, s));
}

// W expf values; lanes past glibc's fast range through expf itself.
template <class I>
typename I::F32::V exp_lanes(typename I::F32::V x) {
  using F = typename I::F32;
  typename F::V e = F::join(exp_half<I>(F::lo(x)), exp_half<I>(F::hi(x)));
  const auto special = I::special(x);
  if (special != 0) {
    alignas(sizeof(typename F::V)) float xs[F::W], es[F::W];
    F::store_aligned(xs, x);
    F::store_aligned(es, e);
    for (int i = 0; i < F::W; ++i)
      if ((special >> i) & 1) es[i] = scalar_exp(xs[i]);
    e = F::load_aligned(es);
  }
  return e;
}

template <class I>
int64_t silu_mul_kernel(float* gate, const float* up, int64_t n) {
  using F = typename I::F32;
  int64_t i = 0;
  const typename F::V one = F::set1(1.0f);
  const typename F::V sign = F::set1(-0.0f);
  for (; i + F::W <= n; i += F::W) {
    const typename F::V g = F::load(gate + i);
    const typename F::V e = exp_lanes<I>(F::xor_(g, sign));
    F::store(gate + i, F::mul(F::div(g, F::add(one, e)), F::load(up + i)));
  }
  return i;
}

template <class I>
int64_t expf_kernel(const float* x, float* out, int64_t n) {
  using F = typename I::F32;
  int64_t i = 0;
  for (; i + F::W <= n; i += F::W) F::store(out + i, exp_lanes<I>(F::load(x + i)));
  return i;
}

}  // namespace
}  // namespace kvbench::silu
