// GGUF writer (version 3): metadata of all 13 value types and tensors with
// alignment padding. Used to write the project's tiny test models, the
// random-weight real-shape models and fuzz seeds. The file is written to a
// temporary file and renamed (model/common/atomic_file.h), so a reader never sees a
// half-written file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf/ggml_types.h"
#include "model/gguf/gguf.h"

namespace kvbench {

class GgufWriter {
 public:
  void set(std::string key, GgufValue value);  // replaces an existing key
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_u64(std::string key, uint64_t v);
  void set_f32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_string(std::string key, std::string v);
  void set_string_array(std::string key, const std::vector<std::string>& v);
  void set_f32_array(std::string key, const std::vector<float>& v);
  void set_i32_array(std::string key, const std::vector<int32_t>& v);

  // `data` holds row_bytes(type, ne[0]) * ne[1] * ... bytes (copied).
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne, const void* data,
                  size_t bytes);
  // Quantizes f32 values (ne[0] contiguous) with the scalar reference quantizer.
  void add_tensor_f32(std::string name, GgmlType type, std::vector<int64_t> ne,
                      const std::vector<float>& values);

  // Fills rows [first_row, first_row + n_rows) of a tensor (a row is ne[0]
  // elements, row_bytes(type, ne[0]) bytes; rows are counted over ne[1..]):
  // dst holds n_rows rows. Called once per chunk, in row order, while the
  // file is written; the same rows must always get the same bytes.
  using RowFill = std::function<void(uint8_t* dst, int64_t first_row, int64_t n_rows)>;
  // A tensor whose bytes are produced while writing, a chunk of at most
  // kFillChunkBytes (or one row) at a time, so files larger than memory can
  // be written. Nothing is stored until then.
  void add_tensor_rows(std::string name, GgmlType type, std::vector<int64_t> ne, RowFill fill);
  static constexpr size_t kFillChunkBytes = size_t{4} << 20;

  void set_alignment(uint32_t alignment);  // also written as general.alignment
  std::vector<uint8_t> to_bytes() const;   // the complete file image
  // Atomic; streams the header and then each tensor (generated tensors one
  // chunk at a time): memory stays at the header plus one chunk. Throws
  // InputError on I/O failure.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    size_t bytes = 0;
    std::vector<uint8_t> data;  // when fill is empty
    RowFill fill;
  };
  // Header, metadata and tensor table (padded to the alignment), then every
  // tensor's bytes with padding, handed to `out` in pieces.
  void emit(const std::function<void(const uint8_t*, size_t)>& out) const;
  void check_new_tensor(const std::string& name) const;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace kvbench
