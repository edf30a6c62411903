// GGUF writer (version 3): metadata of all 13 value types and tensors with
// alignment padding. Used to write the project's tiny test models and fuzz
// seeds. The file is written to "<path>.tmp" and renamed, so a reader never
// sees a half-written file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/ggml_types.h"
#include "model/gguf.h"

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
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                  const void* data, size_t bytes);
  // Quantizes f32 values (ne[0] contiguous) with the scalar reference quantizer.
  void add_tensor_f32(std::string name, GgmlType type, std::vector<int64_t> ne,
                      const std::vector<float>& values);

  void set_alignment(uint32_t alignment);  // also written as general.alignment
  std::vector<uint8_t> to_bytes() const;   // the complete file image
  void write(const std::string& path) const;  // atomic; throws InputError on I/O failure

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace kvbench
