// GGUF writer (version 3, little-endian). Values are validated when they are
// set, so to_bytes() cannot fail half way; misuse of the API (a value whose
// payload does not match its type, a tensor whose bytes do not match its
// shape) throws std::invalid_argument, while I/O failures throw InputError.
#include "model/gguf/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "model/common/atomic_file.h"
#include "model/common/error.h"

namespace kvbench {
namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kMaxAlignment = uint64_t(1) << 31;  // as the reader accepts

class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { le(v, 2); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void string(std::string_view s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    out_.resize((out_.size() + alignment - 1) / alignment * alignment, 0);
  }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

[[noreturn]] void misuse(const std::string& key, const std::string& what) {
  throw std::invalid_argument("GgufWriter: key '" + key + "': " + what);
}

// The integer payload of `v` (either variant alternative) within [lo, hi];
// returned as the two's-complement bit pattern to be truncated by the caller.
uint64_t integer_bits(const std::string& key, const GgufValue& v, int64_t lo, uint64_t hi) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    if (*u > hi) misuse(key, "value " + std::to_string(*u) + " out of range");
    return *u;
  }
  if (const auto* i = std::get_if<int64_t>(&v.data)) {
    if (*i < lo || (*i > 0 && static_cast<uint64_t>(*i) > hi)) {
      misuse(key, "value " + std::to_string(*i) + " out of range");
    }
    return static_cast<uint64_t>(*i);
  }
  misuse(key, std::string(gguf_type_name(v.type)) + " value holds no integer");
}

template <class T>
const T& payload(const std::string& key, const GgufValue& v) {
  if (const auto* p = std::get_if<T>(&v.data)) return *p;
  misuse(key, std::string(gguf_type_name(v.type)) + " value holds the wrong payload");
}

void encode_payload(ByteSink& out, const std::string& key, const GgufValue& v);

void encode_array(ByteSink& out, const std::string& key, const GgufValue& v) {
  const auto& items = payload<std::vector<GgufValue>>(key, v);
  if (static_cast<uint32_t>(v.elem_type) > static_cast<uint32_t>(GgufType::F64)) {
    misuse(key, "invalid array element type");
  }
  out.u32(static_cast<uint32_t>(v.elem_type));
  out.u64(items.size());
  for (const GgufValue& item : items) {
    if (item.type != v.elem_type) misuse(key, "array element type differs from elem_type");
    encode_payload(out, key, item);
  }
}

// Writes the value without its type tag (array elements carry none).
void encode_payload(ByteSink& out, const std::string& key, const GgufValue& v) {
  constexpr int64_t kNone = 0;  // lower bound for unsigned types
  switch (v.type) {
    case GgufType::U8:
      out.u8(static_cast<uint8_t>(integer_bits(key, v, kNone, UINT8_MAX)));
      return;
    case GgufType::I8:
      out.u8(static_cast<uint8_t>(integer_bits(key, v, INT8_MIN, INT8_MAX)));
      return;
    case GgufType::U16:
      out.u16(static_cast<uint16_t>(integer_bits(key, v, kNone, UINT16_MAX)));
      return;
    case GgufType::I16:
      out.u16(static_cast<uint16_t>(integer_bits(key, v, INT16_MIN, INT16_MAX)));
      return;
    case GgufType::U32:
      out.u32(static_cast<uint32_t>(integer_bits(key, v, kNone, UINT32_MAX)));
      return;
    case GgufType::I32:
      out.u32(static_cast<uint32_t>(integer_bits(key, v, INT32_MIN, INT32_MAX)));
      return;
    case GgufType::U64:
      out.u64(integer_bits(key, v, kNone, UINT64_MAX));
      return;
    case GgufType::I64:
      out.u64(integer_bits(key, v, INT64_MIN, INT64_MAX));
      return;
    case GgufType::F32:
      out.u32(std::bit_cast<uint32_t>(static_cast<float>(payload<double>(key, v))));
      return;
    case GgufType::F64:
      out.u64(std::bit_cast<uint64_t>(payload<double>(key, v)));
      return;
    case GgufType::BOOL:
      out.u8(payload<bool>(key, v) ? 1 : 0);
      return;
    case GgufType::STRING:
      out.string(payload<std::string>(key, v));
      return;
    case GgufType::ARRAY:
      encode_array(out, key, v);
      return;
  }
  misuse(key, "invalid value type " + std::to_string(static_cast<uint32_t>(v.type)));
}

GgufValue scalar(GgufType type, decltype(GgufValue::data) data) {
  GgufValue v;
  v.type = type;
  v.data = std::move(data);
  return v;
}

template <class T>
GgufValue array_of(GgufType elem_type, const std::vector<T>& items) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = elem_type;
  std::vector<GgufValue> values;
  values.reserve(items.size());
  for (const T& x : items) {
    if constexpr (std::is_same_v<T, std::string>)
      values.push_back(scalar(elem_type, x));
    else if constexpr (std::is_floating_point_v<T>)
      values.push_back(scalar(elem_type, double{x}));
    else
      values.push_back(scalar(elem_type, int64_t{x}));
  }
  v.data = std::move(values);
  return v;
}

bool usable_alignment(uint64_t a) { return a != 0 && a <= kMaxAlignment && std::has_single_bit(a); }

// Byte size of a tensor, or throws for shapes the reader would reject.
size_t tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument("GgufWriter: tensor '" + name + "': " + what);
  };
  const std::optional<TypeTraits> tt = type_traits(static_cast<uint32_t>(type));
  if (!tt || tt->block_size <= 0 || tt->block_bytes == 0) fail("unknown type");
  if (ne.empty() || ne.size() > 4) fail("needs 1 to 4 dimensions");
  if (std::any_of(ne.begin(), ne.end(), [](int64_t n) { return n <= 0; })) fail("dimension <= 0");
  if (ne[0] % tt->block_size != 0) fail("row is not a whole number of blocks");
  uint64_t bytes = uint64_t(ne[0] / tt->block_size);
  bool overflow = __builtin_mul_overflow(bytes, uint64_t(tt->block_bytes), &bytes);
  for (size_t d = 1; d < ne.size(); ++d)
    overflow |= __builtin_mul_overflow(bytes, uint64_t(ne[d]), &bytes);
  if (overflow || bytes > std::numeric_limits<size_t>::max() / 2) fail("too large");
  return static_cast<size_t>(bytes);
}

}  // namespace

void GgufWriter::set(std::string key, GgufValue value) {
  std::vector<uint8_t> scratch;
  ByteSink check(scratch);
  encode_payload(check, key, value);  // validates before anything is stored
  // Keeps the layout in step with a valid general.alignment; an invalid one
  // is still written (tests use that to produce bad files).
  if (key == "general.alignment" && value.type != GgufType::ARRAY) {
    const auto* u = std::get_if<uint64_t>(&value.data);
    const auto* i = std::get_if<int64_t>(&value.data);
    const uint64_t a = u ? *u : (i && *i > 0 ? static_cast<uint64_t>(*i) : 0);
    if (usable_alignment(a)) alignment_ = static_cast<uint32_t>(a);
  }
  const auto it =
      std::find_if(kv_.begin(), kv_.end(), [&](const auto& kv) { return kv.first == key; });
  if (it != kv_.end())
    it->second = std::move(value);
  else
    kv_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::set_u32(std::string key, uint32_t v) {
  set(std::move(key), scalar(GgufType::U32, uint64_t{v}));
}
void GgufWriter::set_i32(std::string key, int32_t v) {
  set(std::move(key), scalar(GgufType::I32, int64_t{v}));
}
void GgufWriter::set_u64(std::string key, uint64_t v) {
  set(std::move(key), scalar(GgufType::U64, v));
}
void GgufWriter::set_f32(std::string key, float v) {
  set(std::move(key), scalar(GgufType::F32, double{v}));
}
void GgufWriter::set_bool(std::string key, bool v) {
  set(std::move(key), scalar(GgufType::BOOL, v));
}
void GgufWriter::set_string(std::string key, std::string v) {
  set(std::move(key), scalar(GgufType::STRING, std::move(v)));
}
void GgufWriter::set_string_array(std::string key, const std::vector<std::string>& v) {
  set(std::move(key), array_of(GgufType::STRING, v));
}
void GgufWriter::set_f32_array(std::string key, const std::vector<float>& v) {
  set(std::move(key), array_of(GgufType::F32, v));
}
void GgufWriter::set_i32_array(std::string key, const std::vector<int32_t>& v) {
  set(std::move(key), array_of(GgufType::I32, v));
}

void GgufWriter::check_new_tensor(const std::string& name) const {
  for (const Tensor& t : tensors_) {
    if (t.name == name) throw std::invalid_argument("GgufWriter: duplicate tensor '" + name + "'");
  }
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                            const void* data, size_t bytes) {
  const size_t expected = tensor_bytes(name, type, ne);
  if (bytes != expected) {
    throw std::invalid_argument("GgufWriter: tensor '" + name + "': got " + std::to_string(bytes) +
                                " bytes, shape needs " + std::to_string(expected));
  }
  check_new_tensor(name);
  const auto* p = static_cast<const uint8_t*>(data);
  tensors_.push_back(
      Tensor{std::move(name), type, std::move(ne), bytes, std::vector<uint8_t>(p, p + bytes), {}});
}

void GgufWriter::add_tensor_rows(std::string name, GgmlType type, std::vector<int64_t> ne,
                                 RowFill fill) {
  const size_t bytes = tensor_bytes(name, type, ne);
  if (!fill) throw std::invalid_argument("GgufWriter: tensor '" + name + "': no fill function");
  check_new_tensor(name);
  tensors_.push_back(Tensor{std::move(name), type, std::move(ne), bytes, {}, std::move(fill)});
}

void GgufWriter::add_tensor_f32(std::string name, GgmlType type, std::vector<int64_t> ne,
                                const std::vector<float>& values) {
  const size_t bytes = tensor_bytes(name, type, ne);
  int64_t n = 1;
  for (int64_t d : ne) n *= d;  // cannot overflow: tensor_bytes bounded the product
  if (values.size() != static_cast<size_t>(n)) {
    throw std::invalid_argument("GgufWriter: tensor '" + name + "': got " +
                                std::to_string(values.size()) + " values, shape needs " +
                                std::to_string(n));
  }
  const int64_t rows = n / ne[0];
  const size_t row = bytes / static_cast<size_t>(rows);
  std::vector<uint8_t> data(bytes);
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(type, values.data() + r * ne[0], data.data() + static_cast<size_t>(r) * row,
                 ne[0]);
  }
  add_tensor(std::move(name), type, std::move(ne), data.data(), data.size());
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (!usable_alignment(alignment)) {
    throw std::invalid_argument("GgufWriter: alignment " + std::to_string(alignment) +
                                " is not a power of two");
  }
  set_u32("general.alignment", alignment);  // also updates alignment_
}

void GgufWriter::emit(const std::function<void(const uint8_t*, size_t)>& out) const {
  std::vector<uint8_t> header;
  ByteSink h(header);
  h.bytes("GGUF", 4);
  h.u32(kVersion);
  h.u64(tensors_.size());
  h.u64(kv_.size());
  for (const auto& [key, value] : kv_) {
    h.string(key);
    h.u32(static_cast<uint32_t>(value.type));
    encode_payload(h, key, value);
  }
  const auto padding = [&](uint64_t n) { return (alignment_ - n % alignment_) % alignment_; };
  uint64_t offset = 0;  // each tensor starts at a multiple of the alignment
  for (const Tensor& t : tensors_) {
    h.string(t.name);
    h.u32(static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) h.u64(static_cast<uint64_t>(n));
    h.u32(static_cast<uint32_t>(t.type));
    h.u64(offset);
    offset += t.bytes + padding(t.bytes);
  }
  h.pad_to(alignment_);
  out(header.data(), header.size());

  const std::vector<uint8_t> zeros(alignment_, 0);
  std::vector<uint8_t> chunk;
  for (const Tensor& t : tensors_) {
    if (!t.fill) {
      out(t.data.data(), t.data.size());
    } else {
      const size_t row = row_bytes(t.type, t.ne[0]);
      const int64_t rows = static_cast<int64_t>(t.bytes / row);
      const int64_t per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kFillChunkBytes / row));
      chunk.resize(static_cast<size_t>(std::min(rows, per_chunk)) * row);
      for (int64_t r = 0; r < rows; r += per_chunk) {
        const int64_t n = std::min(per_chunk, rows - r);
        t.fill(chunk.data(), r, n);
        out(chunk.data(), static_cast<size_t>(n) * row);
      }
    }
    // data_offset is aligned, so this aligns the next offset
    out(zeros.data(), static_cast<size_t>(padding(t.bytes)));
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> bytes;
  emit([&](const uint8_t* p, size_t n) { bytes.insert(bytes.end(), p, p + n); });
  return bytes;
}

void GgufWriter::write(const std::string& path) const {
  AtomicFile file(path);
  emit([&](const uint8_t* p, size_t n) { file.write(p, n); });
  file.commit();
}

}  // namespace kvbench
