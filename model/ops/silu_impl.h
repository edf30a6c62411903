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
//   F: W floats; H: W / 2 floats; D: W / 2 doubles; L: W / 2 64-bit integers
//   lo(F), hi(F) -> H; join(H lo, H hi) -> F
//   widen(H) -> D, narrow(D) -> H; set1(double), fmadd(a, b, c) = a * b + c,
//     fmsub(a, b, c) = a * b - c, sub, mul on D
//   bits(D) -> L, from_bits(L) -> D; low5(L) = L & 31; table(L idx) = the
//     kTab entries idx; add(L, L); shl47(L) = L << 47
//   special(F) -> bit i set where lane i's bits >> 20 & 0x7ff exceed kMaxTop
//   set1f(float), loadu, storeu, load, store (aligned), xor_, add, div, mul
#pragma once

#include <cmath>
#include <cstdint>

#include "model/ops/silu_kernels.h"

namespace kvbench::silu {
namespace {

float scalar_exp(float x) { return std::exp(x); }

// W / 2 floats widened to double -> W / 2 expf values.
template <class I>
typename I::H exp_half(typename I::H x) {
  using D = typename I::D;
  const D xd = I::widen(x);
  const D inv = I::set1(kInvLn2N), shift = I::set1(kShift);
  const D kds = I::fmadd(inv, xd, shift);
  const typename I::L ki = I::bits(kds);
  const D kd = I::sub(kds, shift);
  const D r = I::fmsub(inv, xd, kd);
  typename I::L t = I::table(I::low5(ki));
  t = I::add(t, I::shl47(ki));
  const D s = I::from_bits(t);
  const D z = I::fmadd(r, I::set1(kC0), I::set1(kC1));
  const D r2 = I::mul(r, r);
  D y = I::fmadd(r, I::set1(kC2), I::set1(1.0));
  y = I::fmadd(z, r2, y);
  return I::narrow(I::mul(y, s));
}

// W expf values; lanes past glibc's fast range through expf itself.
template <class I>
typename I::F exp_lanes(typename I::F x) {
  typename I::F e = I::join(exp_half<I>(I::lo(x)), exp_half<I>(I::hi(x)));
  const auto special = I::special(x);
  if (special != 0) {
    alignas(sizeof(typename I::F)) float xs[I::W], es[I::W];
    I::store(xs, x);
    I::store(es, e);
    for (int i = 0; i < I::W; ++i)
      if ((special >> i) & 1) es[i] = scalar_exp(xs[i]);
    e = I::load(es);
  }
  return e;
}

template <class I>
int64_t silu_mul_kernel(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  const typename I::F one = I::set1f(1.0f);
  const typename I::F sign = I::set1f(-0.0f);
  for (; i + I::W <= n; i += I::W) {
    const typename I::F g = I::loadu(gate + i);
    const typename I::F e = exp_lanes<I>(I::xor_(g, sign));
    I::storeu(gate + i, I::mul(I::div(g, I::add(one, e)), I::loadu(up + i)));
  }
  return i;
}

template <class I>
int64_t expf_kernel(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + I::W <= n; i += I::W) I::storeu(out + i, exp_lanes<I>(I::loadu(x + i)));
  return i;
}

}  // namespace
}  // namespace kvbench::silu
