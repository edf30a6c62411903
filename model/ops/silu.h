// The SwiGLU gate of LLaMA feed-forward blocks: gate[i] = silu(gate[i]) * up[i]
// with silu(g) = g / (1 + exp(-g)), in float, exp being the C library's expf.
//
// The scalar loop is the reference. The AVX-512 and AVX2 versions compute
// expf with glibc's own algorithm (the one its FMA variant runs on this class
// of CPU: a 32-entry table of 2^(i/32) and a cubic in double precision, the
// same fused operations in the same order), so they give the reference's bits
// wherever the C library is that glibc; arguments whose exponent field lies
// from 88 on (|x| >= 88, NaN, infinities) go to expf itself. Once per
// process silu_mul checks each kernel against expf on 4,096 arguments and
// keeps to the scalar loop if any differs (another C library).
// tests/test_silu.cpp compares the paths on a stride of every float bit
// pattern (and every pattern when KVBENCH_EXHAUSTIVE=1).
#pragma once

#include <cstdint>

#include "model/ops/quant_dot.h"

namespace kvbench {

// gate[i] = gate[i] / (1 + expf(-gate[i])) * up[i] for i < n.
void silu_mul(float* gate, const float* up, int64_t n, CpuPath path);

// expf(x[i]) for i < n through the path's kernel (for the tests).
void expf_rows(const float* x, float* out, int64_t n, CpuPath path);

}  // namespace kvbench
