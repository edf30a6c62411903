// f16 K/V rows: conversion between f32 and IEEE binary16 (round to nearest
// even), with F16C when the CPU has it. Both paths give the same bits as the
// scalar reference fp32_to_fp16() / fp16_to_fp32() (model/gguf/ggml_types.h) for
// every non-NaN input.
#pragma once

#include <cstdint>

namespace kvbench {

// src[n] -> dst[n]
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);
void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n);

}  // namespace kvbench
