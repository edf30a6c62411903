#include "tests/support/edited_model.h"

#include <gtest/gtest.h>

#include "model/gguf/gguf.h"
#include "model/gguf/gguf_writer.h"

namespace kvbench::test {

std::string edited_model(const std::string& name, const Edit& edit,
                         const TinyModelOptions& options) {
  const auto bytes = make_tiny_model(options);
  auto src = GgufFile::from_memory(bytes.data(), bytes.size(), "tiny");
  GgufWriter w;
  for (const auto& [k, v] : src->metadata()) {
    GgufValue copy = v;
    if (!edit.key || edit.key(k, copy)) w.set(k, copy);
  }
  if (edit.add) edit.add(w);
  for (const auto& t : src->tensors()) {
    GgmlType type = t.type;
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    if (edit.tensor && !edit.tensor(t, type, ne)) continue;
    if (type == t.type && ne == std::vector<int64_t>(t.ne, t.ne + t.n_dims)) {
      w.add_tensor(t.name, t.type, ne, t.data, t.bytes);
    } else {
      // Zero bytes of the new type and shape (a valid block of any type).
      size_t bytes = row_bytes(type, ne[0]);
      for (size_t i = 1; i < ne.size(); ++i) bytes *= ne[i];
      const std::vector<uint8_t> zeros(bytes, 0);
      w.add_tensor(t.name, type, ne, zeros.data(), zeros.size());
    }
  }
  const std::string path = testing::TempDir() + name + ".gguf";
  w.write(path);
  return path;
}

}  // namespace kvbench::test
