// Internal to silu*.cpp: the SIMD kernels and glibc's expf constants.
#pragma once

#include <cstdint>

namespace kvbench::silu {

// glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, from Arm's optimized
// routines), restated: with N = 32, z = x * N / ln 2 = k + r (k integer),
// exp(x) = 2^(k/N) * 2^(r/N), 2^(k/N) from a table entry plus k in the
// exponent bits, 2^(r/N) by a cubic. The constants are N / ln 2, 2^52 * 1.5
// (the rounding shift) and the cubic's coefficients pre-scaled by N^-3, N^-2
// and N^-1; tab[i] = bits(2^(i/32)) - (i << 47), every 2^(i/32) the double
// nearest to it (derived here, and checked equal to the library's table).
inline constexpr double kInvLn2N = 0x1.71547652b82fep+5;
inline constexpr double kShift = 0x1.8p+52;
inline constexpr double kC0 = 0x1.c6af84b912394p-20;
inline constexpr double kC1 = 0x1.ebfce50fac4f3p-13;
inline constexpr double kC2 = 0x1.62e42ff0c52d6p-6;
// Arguments whose bits >> 20 & 0x7ff exceed this go to expf itself (as
// glibc's special-case branch; |x| of about 88 and beyond, NaN, infinity).
inline constexpr uint32_t kMaxTop = 0x42a;
alignas(64) inline constexpr uint64_t kTab[32] = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,
    0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,
    0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,
    0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,
    0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,
    0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull,
};

// Each handles a prefix of whole vectors and returns its length (0 when the
// path is not compiled in: simd_stubs.cpp); the caller finishes the rest with
// the scalar loop.
int64_t silu_mul_avx512(float* gate, const float* up, int64_t n);
int64_t silu_mul_avx2(float* gate, const float* up, int64_t n);
int64_t expf_avx512(const float* x, float* out, int64_t n);
int64_t expf_avx2(const float* x, float* out, int64_t n);

}  // namespace kvbench::silu
