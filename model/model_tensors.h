// A GGUF file's tensors as a model's loader takes them. Each take checks the
// tensor (present, of a type kvbench reads, of the shape the hyper-parameters
// give); check_nothing_left() then refuses every tensor the loader did not
// take. A file whose tensors do not match its hyper-parameters (a layer at or
// beyond ARCH.block_count, a tensor of another architecture, a stray name) is
// refused instead of running on part of its weights: llama.cpp refuses such
// a file too ("wrong number of tensors").
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/llama_config.h"
#include "model/ops/weight_matrix.h"

namespace kvbench {

class GgufFile;
struct GgufTensor;

class ModelTensors {
 public:
  // `c`: the hyper-parameters the tensors must match (its arch_name and
  // n_layers name the keys in messages). Both must outlive this object.
  ModelTensors(const GgufFile& file, const LlamaConfig& c);

  // An optional tensor: taken (and then checked by the take below) or not.
  bool has(std::string_view name) const;
  // The matrix `name` with ne = {cols, rows}. InputError("<path>: ...")
  // naming the tensor when it is missing, of a type kvbench cannot
  // dequantize, or of another shape.
  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols);
  // The vector `name` of n elements, as f32. Throws like matrix().
  std::vector<float> vector_f32(const std::string& name, int64_t n);

  // InputError naming the first tensor, in file order, that no take took.
  void check_nothing_left() const;

 private:
  const GgufTensor& take(const std::string& name);
  const GgufFile& f_;
  const LlamaConfig& c_;
  std::set<std::string, std::less<>> taken_;
};

}  // namespace kvbench
