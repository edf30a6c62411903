#include "tests/support/reference_llama.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>

#include <unistd.h>

#include <gtest/gtest.h>

#include "model/testing/tiny_model.h"

namespace kvbench::test {
namespace {

using reference::attend;
using reference::DenseMatrix;
using reference::rms_norm;
using reference::rms_normed;

// RoPE of one head vector at position pos: adjacent pairs (LLaMA), or
// element i with element i + n_dims/2 (NEOX: Qwen, Gemma, Phi-3).
void rope(double* v, int n_dims, int64_t pos, const RopeConfig& r) {
  for (int i = 0; i < n_dims / 2; ++i) {
    double theta = std::pow(static_cast<double>(r.freq_base), -2.0 * i / n_dims) * r.freq_scale;
    if (!r.freq_factors.empty()) theta /= r.freq_factors[i];
    // LongRoPE's attention factor scales the rotation (Phi-3; 1 elsewhere).
    const double a = pos * theta, c = std::cos(a) * r.attn_factor, s = std::sin(a) * r.attn_factor;
    const int i0 = r.neox ? i : 2 * i, i1 = r.neox ? i + n_dims / 2 : 2 * i + 1;
    const double x0 = v[i0], x1 = v[i1];
    v[i0] = x0 * c - x1 * s;
    v[i1] = x0 * s + x1 * c;
  }
}

void add(std::vector<double>& x, const std::vector<float>& bias) {
  for (size_t i = 0; i < bias.size(); ++i) x[i] += bias[i];
}

}  // namespace

ReferenceLlama::ReferenceLlama(const LlamaModel& model) : Forward(model) {
  for (const auto& L : model.weights().layers) {
    layers_.push_back({L.attn_norm, L.ffn_norm, L.bq, L.bk, L.bv, L.q_norm, L.k_norm,
                       DenseMatrix::of(L.wq), DenseMatrix::of(L.wk), DenseMatrix::of(L.wv),
                       DenseMatrix::of(L.wo), DenseMatrix::of(L.w_gate), DenseMatrix::of(L.w_up),
                       DenseMatrix::of(L.w_down)});
  }
}

std::vector<float> ReferenceLlama::logits(const std::vector<int32_t>& tokens,
                                          const std::vector<int64_t>& score_at) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int hd = c_.head_dim;
  // Residual stream for every position: x[t][dim].
  std::vector<std::vector<double>> x(n, std::vector<double>(c_.dim));
  for (int64_t t = 0; t < n; ++t)
    for (int i = 0; i < c_.dim; ++i) x[t][i] = embd_.w[tokens[t] * int64_t{c_.dim} + i];

  for (const Layer& L : layers_) {
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      const auto xn = rms_normed(x[t], L.attn_norm, c_.rms_eps);
      q[t] = L.wq.times(xn.data());
      k[t] = L.wk.times(xn.data());
      v[t] = L.wv.times(xn.data());
      add(q[t], L.bq);  // Qwen2's biases (empty elsewhere)
      add(k[t], L.bk);
      add(v[t], L.bv);
      for (int h = 0; h < c_.n_heads; ++h) {
        if (c_.norms.qk) rms_norm(q[t].data() + h * hd, hd, L.q_norm, c_.rms_eps);  // Qwen3
        rope(q[t].data() + h * hd, c_.rope.n_dims, t, c_.rope);
      }
      for (int h = 0; h < c_.n_kv_heads; ++h) {
        if (c_.norms.qk) rms_norm(k[t].data() + h * hd, hd, L.k_norm, c_.rms_eps);
        rope(k[t].data() + h * hd, c_.rope.n_dims, t, c_.rope);
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      const auto attn = attend(c_, q, k, v, t, 0, 1.0 / std::sqrt(static_cast<double>(hd)));
      const auto o = L.wo.times(attn.data());
      for (int i = 0; i < c_.dim; ++i) x[t][i] += o[i];
      const auto xn = rms_normed(x[t], L.ffn_norm, c_.rms_eps);
      auto g = L.gate.times(xn.data());
      const auto u = L.up.times(xn.data());
      for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const auto d = L.down.times(g.data());
      for (int i = 0; i < c_.dim; ++i) x[t][i] += d[i];
    }
  }
  std::vector<float> out;
  out.reserve(score_at.size() * c_.n_vocab);
  for (int64_t t : score_at) {
    const auto xn = rms_normed(x[t], output_norm_, c_.rms_eps);
    const auto l = output_.times(xn.data());
    for (double e : l) out.push_back(static_cast<float>(e));
  }
  return out;
}

std::string tiny_model_path(bool spm, bool tied) {
  static std::map<std::pair<bool, bool>, std::string> paths;
  auto& p = paths[{spm, tied}];
  if (p.empty()) {
    p = testing::TempDir() + "kvbench-tiny-" + (spm ? "spm" : "bpe") + (tied ? "" : "-untied") +
        "-" + std::to_string(::getpid()) + ".gguf";
    TinyModelOptions o;
    o.vocab = spm ? TinyVocabKind::Spm : TinyVocabKind::Bpe;
    o.tied_output = tied;
    write_tiny_model(p, o);
  }
  return p;
}

std::string tiny_arch_path(TinyArch arch) {
  static std::map<TinyArch, std::string> paths;
  auto& p = paths[arch];
  if (p.empty()) {
    p = testing::TempDir() + "kvbench-tiny-arch-" + std::string(tiny_arch_name(arch)) + "-" +
        std::to_string(::getpid()) + ".gguf";
    TinyModelOptions o;
    o.arch = arch;
    write_tiny_model(p, o);
  }
  return p;
}

std::string smollm2_path() {
  if (const char* env = std::getenv("KVBENCH_MODEL"); env && *env) return env;
  const std::string p = std::string(KVBENCH_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  return std::filesystem::exists(p) ? p : "";
}

std::vector<int32_t> some_tokens(int n, int n_vocab, uint32_t seed) {
  std::vector<int32_t> t(n);
  uint32_t s = seed;
  for (auto& x : t) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<int32_t>((s >> 8) % n_vocab);
  }
  return t;
}

std::vector<int32_t> iota_positions(int64_t begin, int64_t n) {
  std::vector<int32_t> p(n);
  std::iota(p.begin(), p.end(), static_cast<int32_t>(begin));
  return p;
}

float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<CpuPath> supported_paths() {
  std::vector<CpuPath> paths;
  for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512})
    if (cpu_path_supported(p)) paths.push_back(p);
  return paths;
}

}  // namespace kvbench::test
