#include "model/model_tensors.h"

#include <charconv>

#include "model/common/error.h"
#include "model/common/printable.h"
#include "model/gguf/gguf.h"

namespace kvbench {
namespace {

std::string shape_str(const GgufTensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

// The layer of a block tensor "blk.<N>.<rest>" (-1 for any other name).
int64_t layer_of(std::string_view name) {
  constexpr std::string_view kBlock = "blk.";
  if (name.substr(0, kBlock.size()) != kBlock) return -1;
  name.remove_prefix(kBlock.size());
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec != std::errc() || end == name.data() + name.size() || *end != '.') return -1;
  return n;
}

}  // namespace

ModelTensors::ModelTensors(const GgufFile& f, const LlamaConfig& c) : f_(f), c_(c) {}

bool ModelTensors::has(std::string_view name) const { return f_.find_tensor(name) != nullptr; }

const GgufTensor& ModelTensors::take(const std::string& name) {
  const GgufTensor* t = f_.find_tensor(name);
  if (!t) {
    // A missing block tensor: the file has fewer layers than it declares.
    const std::string why = layer_of(name) >= 0 ? " (" + c_.arch_name + ".block_count is " +
                                                      std::to_string(c_.n_layers) + ")"
                                                : "";
    throw InputError(f_.path() + ": missing tensor '" + name + "'" + why);
  }
  const auto tr = type_traits(static_cast<uint32_t>(t->type));
  if (!tr || !tr->dequantizable)
    throw InputError(f_.path() + ": tensor '" + name + "' has type " +
                     std::string(type_name(t->type)) + ", which kvbench cannot read");
  taken_.insert(name);
  return *t;
}

WeightMatrix ModelTensors::matrix(const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensor& t = take(name);
  if (t.n_dims > 2 || t.ne[0] != cols || t.ne[1] != rows)
    throw InputError(f_.path() + ": tensor '" + name + "' has shape " + shape_str(t) +
                     ", expected [" + std::to_string(cols) + ", " + std::to_string(rows) + "]");
  WeightMatrix m;
  m.type = t.type;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = row_bytes(t.type, cols);
  m.data = t.data;
  return m;
}

std::vector<float> ModelTensors::vector_f32(const std::string& name, int64_t n) {
  const GgufTensor& t = take(name);
  if (t.n_dims != 1 || t.ne[0] != n)
    throw InputError(f_.path() + ": tensor '" + name + "' has shape " + shape_str(t) +
                     ", expected [" + std::to_string(n) + "]");
  std::vector<float> out(n);
  dequantize_row(t.type, t.data, out.data(), n);
  return out;
}

void ModelTensors::check_nothing_left() const {
  for (const GgufTensor& t : f_.tensors()) {
    if (taken_.count(t.name)) continue;
    const std::string shown = "'" + escaped_text(t.name, 64) + "'";
    const int64_t layer = layer_of(t.name);
    if (layer >= c_.n_layers)
      throw InputError(f_.path() + ": tensor " + shown + " is for layer " + std::to_string(layer) +
                       ", but " + c_.arch_name + ".block_count is " + std::to_string(c_.n_layers) +
                       " (layers 0.." + std::to_string(c_.n_layers - 1) + ")");
    throw InputError(f_.path() + ": unknown tensor " + shown + " (not part of a " + c_.arch_name +
                     " model of these hyper-parameters)");
  }
}

}  // namespace kvbench
