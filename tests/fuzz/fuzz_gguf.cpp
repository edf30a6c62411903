// libFuzzer target for the GGUF reader. Any input must either be rejected
// with InputError or yield a file whose metadata, getters and tensor data can
// all be used without crashes, leaks or undefined behaviour, and which the
// writer reproduces.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "model/common/error.h"
#include "model/gguf/ggml_types.h"
#include "model/gguf/gguf.h"
#include "model/gguf/gguf_writer.h"

namespace {

using kvbench::GgufFile;
using kvbench::GgufTensor;
using kvbench::GgufValue;
using kvbench::InputError;

constexpr int64_t kMaxDequantized = 4096;  // elements per tensor, keeps runs fast

// Every typed getter on every key: type mismatches must surface as InputError.
void exercise_getters(const GgufFile& f, const std::string& key) {
  const auto attempt = [](auto&& get) {
    try {
      get();
    } catch (const InputError&) {
    }
  };
  attempt([&] { f.get_u64(key); });
  attempt([&] { f.get_i64(key); });
  attempt([&] { f.get_u32(key); });
  attempt([&] { f.get_f32(key); });
  attempt([&] { f.get_bool(key); });
  attempt([&] { f.get_string(key); });
  attempt([&] { f.get_u32_or(key, 0); });
  attempt([&] { f.get_string_array(key); });
  attempt([&] { f.get_f32_array(key); });
  attempt([&] { f.get_i32_array(key); });
  attempt([&] { f.get_bool_array(key); });
}

// Reads every byte of the tensor (ASan checks the range) and dequantizes the
// start of its first row when kvbench supports the type.
void exercise_tensor(const GgufFile& f, const GgufTensor& t) {
  if (f.find_tensor(t.name) != &t) std::abort();
  uint8_t sum = 0;
  for (uint64_t i = 0; i < t.bytes; ++i) sum = static_cast<uint8_t>(sum + t.data[i]);
  volatile uint8_t sink = sum;
  (void)sink;
  const auto tt = kvbench::type_traits(static_cast<uint32_t>(t.type));
  if (!tt) std::abort();  // the reader must have rejected the type
  if (!tt->dequantizable || tt->block_size > kMaxDequantized) return;
  const int64_t n = std::min(t.ne[0], kMaxDequantized) / tt->block_size * tt->block_size;
  if (n == 0) return;
  if (kvbench::row_bytes(t.type, n) > t.bytes) std::abort();
  std::vector<float> row(static_cast<size_t>(n));
  kvbench::dequantize_row(t.type, t.data, row.data(), n);
}

// Whatever the reader accepts, the writer must reproduce: same metadata
// display, same tensor shapes and bytes. Files aligned to more than 1 MiB
// are left out: the reader only maps them, but the writer pads its output
// in memory to the alignment (up to 2^31 bytes), past this target's memory
// limit (kvbench writes only its own models, aligned to 32 bytes).
void exercise_round_trip(const GgufFile& f) {
  if (const GgufValue* a = f.find("general.alignment")) {
    const auto* u = std::get_if<uint64_t>(&a->data);
    const auto* i = std::get_if<int64_t>(&a->data);
    if ((u && *u > (uint64_t{1} << 20)) || (i && *i > (int64_t{1} << 20))) return;
  }
  kvbench::GgufWriter w;
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  for (const GgufTensor& t : f.tensors()) {
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.bytes);
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  const auto g = GgufFile::from_memory(bytes.data(), bytes.size(), "rewritten.gguf");
  if (g->metadata().size() != f.metadata().size() || g->tensors().size() != f.tensors().size())
    std::abort();
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    if (g->metadata()[i].second.to_display() != f.metadata()[i].second.to_display()) std::abort();
  }
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const GgufTensor& a = f.tensors()[i];
    const GgufTensor& b = g->tensors()[i];
    if (a.bytes != b.bytes || a.n_dims != b.n_dims || std::memcmp(a.data, b.data, a.bytes) != 0)
      std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> f;
  try {
    f = GgufFile::from_memory(data, size, "fuzz.gguf");
  } catch (const InputError&) {
    return 0;
  }
  for (const auto& [key, value] : f->metadata()) {
    if (f->find(key) != &value) std::abort();
    const std::string shown = value.to_display();
    if (shown.find('\n') != std::string::npos) std::abort();  // one line for `kvbench info`
    exercise_getters(*f, key);
  }
  for (const GgufTensor& t : f->tensors()) exercise_tensor(*f, t);
  exercise_round_trip(*f);
  return 0;
}
