// GGUF reader: maps a file read-only and exposes its typed metadata and tensor
// table. Every count, length, offset and size is checked against the file
// before use; any violation throws InputError("<path>: <what>").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/gguf/ggml_types.h"

namespace kvbench {

// The 13 metadata value types, numbered as on disk.
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
std::string_view gguf_type_name(GgufType type);

// A metadata value. Scalars are widened to int64 / uint64 / double;
// arrays keep their element type and hold their elements (no nested arrays are
// produced by real writers, but the reader accepts and stores them).
struct GgufValue {
  GgufType type = GgufType::U8;
  GgufType elem_type = GgufType::U8;  // meaningful for ARRAY only
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> data;

  // Typed values are read through GgufFile's getters only, so that every
  // metadata error names the file as well as the key.
  std::string to_display(size_t max_items = 8) const;  // for `kvbench info`
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};   // ne[0] is the contiguous (row) dimension
  uint64_t offset = 0;            // relative to the data section
  uint64_t bytes = 0;             // row_bytes(type, ne[0]) * ne[1] * ne[2] * ne[3]
  const uint8_t* data = nullptr;  // into the mapping
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Opens and validates the whole header and tensor table; throws InputError.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Same checks over a caller-owned buffer (fuzzing, tests). `name` stands in
  // for the path in error messages. The buffer must outlive the object.
  static std::unique_ptr<GgufFile> from_memory(const uint8_t* data, size_t size,
                                               const std::string& name);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order (keys are unique; duplicates are rejected on open).
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Required getters: throw InputError("<path>: missing key '<key>'") or
  // InputError("<path>: key '<key>' has type T, expected E") when the stored
  // type does not fit (a string or float read as an integer, a negative value
  // read as unsigned, an array read as a scalar, ...).
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;  // range-checked
  float get_f32(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  // Optional getters: the default when absent, a type error when present but wrong.
  uint32_t get_u32_or(std::string_view key, uint32_t fallback) const;
  float get_f32_or(std::string_view key, float fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;
  std::string get_string_or(std::string_view key, std::string_view fallback) const;
  // Arrays: element type checked.
  std::vector<std::string_view> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;
  std::vector<bool> get_bool_array(std::string_view key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  void parse();  // fills everything below from [base_, base_ + size_)

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool owns_mapping_ = false;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace kvbench
