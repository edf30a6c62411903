// Rotary position embedding. Dimension pairs rotate together by angle
// pos * theta_i, theta_i = freq_scale * base^(-2i / n_dims) / factor_i, in one
// of two pairings:
//  - pair-wise (2i, 2i+1): GGUF llama weights (llama.cpp's ROPE_TYPE_NORM;
//    HF's rotate-half pairs i with i + d/2, and the GGUF converter permutes
//    Q/K so that the adjacent-pair form gives the same result);
//  - halves (i, i + n_dims/2): "NEOX" (llama.cpp's ROPE_TYPE_NEOX), which
//    GGUF files of Gemma keep unpermuted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvbench {

struct RopeConfig {
  int n_dims = 0;  // rotated dimensions (<= head_dim; the rest pass through)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;          // linear scaling: 1 / factor
  std::vector<float> freq_factors;  // [n_dims / 2] llama3-style divisors; empty = none
  bool neox = false;                // pairs (i, i + n_dims/2) instead of (2i, 2i+1)
  // LongRoPE's attention factor (Phi-3's ARCH.rope.scaling.attn_factor):
  // the block's rotation of Q and K also multiplies the rotated dimensions
  // by it, as ggml_rope_ext's attn_factor does (cos and sin scaled), so
  // scores grow by its square. Rotations outside the block (re-rotating
  // stored keys, un-rotating queries) stay pure: the cache's keys already
  // carry the factor once.
  float attn_factor = 1.0f;
};

// Inverse frequencies theta_i, [n_dims / 2].
std::vector<float> rope_inv_freq(const RopeConfig& rope);

// Rotates each of n_vectors vectors of length `stride` (head_dim) in place at
// `pos`: x[v * stride + 2i], x[v * stride + 2i + 1] for i < n_dims / 2.
// `delta` positions may be negative (re-rotation of stored keys).
void rope_rotate(float* x, int n_vectors, int stride, int64_t pos,
                 const std::vector<float>& inv_freq);
// The same rotation in the NEOX pairing: x[v * stride + i] with
// x[v * stride + i + n_dims / 2] for i < n_dims / 2 (n_dims = 2 * inv_freq.size()).
void rope_rotate_neox(float* x, int n_vectors, int stride, int64_t pos,
                      const std::vector<float>& inv_freq);

// The cosines and sines of a step's angles, pos * theta_i for each position
// and i < n_dims / 2: the values rope_rotate computes per call, computed once
// per step and shared by every layer (a forward pass rotates Q and K at the
// same positions in each of its layers; RoPE was 1.9% of pp2048, half of it
// the calls to cos and sin).
struct RopeTable {
  int half = 0;
  float scale = 1.0f;           // RopeConfig::attn_factor: multiplies every cos and sin
  std::vector<float> cos, sin;  // [positions][half]

  // Room for n positions of inv_freq's pairs (keeps what it holds).
  void resize(int64_t n, const std::vector<float>& inv_freq);
  // Rows [t0, t1): the angles at positions[t0, t1) (threads fill disjoint ranges).
  void fill(std::span<const int32_t> positions, int64_t t0, int64_t t1,
            const std::vector<float>& inv_freq);
  const float* cos_at(int64_t t) const { return cos.data() + t * half; }
  const float* sin_at(int64_t t) const { return sin.data() + t * half; }
};

// rope_rotate / rope_rotate_neox with the angles' cosines c[i] and sines s[i]
// given (a RopeTable row): the same bits.
void rope_rotate_cs(float* x, int n_vectors, int stride, const float* c, const float* s, int half);
void rope_rotate_neox_cs(float* x, int n_vectors, int stride, const float* c, const float* s,
                         int half);

}  // namespace kvbench
