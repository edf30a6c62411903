// The family tests' tiny files at a chosen shape and weight type (test_qwen,
// test_phi3, test_gemma2): the options and the temporary file, named so
// that each shape and type gets its own.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "model/testing/tiny_model.h"

namespace kvbench::test {

// Width, query heads, KV heads, head size; all 0: the tiny model's default.
struct TinyShape {
  int dim, heads, kv_heads, head_dim;
};

// `arch` at shape s in weights w, with a feed-forward of 512 (the default
// one for the default shape).
inline TinyModelOptions shaped_tiny_options(TinyArch arch, const TinyShape& s, TinyWeights w) {
  TinyModelOptions o;
  o.arch = arch;
  o.dim = s.dim;
  o.n_heads = s.heads;
  o.n_kv_heads = s.kv_heads;
  o.head_dim = s.head_dim;
  o.ffn_dim = s.dim ? 512 : 0;
  o.weights = w;
  return o;
}

// Writes o to <TempDir>kvbench-tiny-<tag>-<heads>x<head_dim>-<weights>.gguf.
inline std::string write_shaped_tiny(const TinyModelOptions& o, const std::string& tag) {
  const std::string path = testing::TempDir() + "kvbench-tiny-" + tag + "-" +
                           std::to_string(o.n_heads) + "x" + std::to_string(o.head_dim) + "-" +
                           std::string(tiny_weights_name(o.weights)) + ".gguf";
  write_tiny_model(path, o);
  return path;
}

}  // namespace kvbench::test
