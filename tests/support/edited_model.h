// The loader tests' hostile-by-hand model files: the tiny model copied
// through a GGUF writer with keys and tensors dropped or changed on the way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/gguf/gguf.h"
#include "model/gguf/gguf_writer.h"
#include "model/testing/tiny_model.h"

namespace kvbench::test {

// What to change: `key` sees every metadata value (false = drop it) and may
// change it; `tensor` sees every tensor (false = drop it) and may change its
// type and shape (the data then becomes zero bytes of the new size); `add`
// then sets keys of its own on the writer.
struct Edit {
  std::function<bool(const std::string& key, GgufValue& value)> key;
  std::function<bool(const GgufTensor& t, GgmlType& type, std::vector<int64_t>& ne)> tensor;
  std::function<void(GgufWriter& w)> add = {};
};

// The tiny model of `options`, edited, written to <TempDir><name>.gguf (its
// path).
std::string edited_model(const std::string& name, const Edit& edit,
                         const TinyModelOptions& options = {});

}  // namespace kvbench::test
