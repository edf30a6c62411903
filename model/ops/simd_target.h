// The preamble the instruction-set files of model/ops share.
//
// Functions defined between KVBENCH_TARGET_BEGIN("avx2,fma,f16c") and
// KVBENCH_TARGET_END() are compiled for those instruction sets. There is no
// global -march: the library runs on any x86-64, and a path's code runs only
// after the run-time CPU check (CpuPath, model/ops/quant_dot.h). Include
// <immintrin.h> and the standard headers before BEGIN: their functions must
// stay baseline code, shared with every other file. Everything a region
// defines that another region could also define (templates, helpers of a
// shared header) needs internal linkage, or the linker may keep one path's
// copy for all of them.
#pragma once

#define KVBENCH_PRAGMA(x) _Pragma(#x)

#if defined(__clang__)
#define KVBENCH_TARGET_BEGIN(isa) \
  KVBENCH_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define KVBENCH_TARGET_END() _Pragma("clang attribute pop")
#elif defined(__GNUC__)
#define KVBENCH_TARGET_BEGIN(isa) _Pragma("GCC push_options") KVBENCH_PRAGMA(GCC target(isa))
#define KVBENCH_TARGET_END() _Pragma("GCC pop_options")
#endif

// Loops over the rows, tokens and chunks of a micro-kernel must be fully
// unrolled, or their accumulators live in memory instead of registers.
#if defined(__clang__)
#define KVBENCH_UNROLL _Pragma("unroll")
#else
#define KVBENCH_UNROLL _Pragma("GCC unroll 16")
#endif

#define KVBENCH_INLINE __attribute__((always_inline)) inline
