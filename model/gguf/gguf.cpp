// GGUF reader. The file is untrusted: every count, length and offset is
// checked against the bytes that are actually left *before* anything is
// allocated or read, so a hostile header cannot trigger a huge allocation or
// an out-of-bounds read. See docs/gguf.md in ggml-org/ggml for the format.
#include "model/gguf/gguf.h"
#include "model/common/printable.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "model/common/enum_names.h"
#include "model/common/error.h"
#include "model/common/input_file.h"

namespace kvbench {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint64_t kDefaultAlignment = 32;
// The spec stores general.alignment as u32; a cap keeps align_up overflow-free.
constexpr uint64_t kMaxAlignment = uint64_t(1) << 31;
constexpr uint32_t kMaxDims = 4;
// Top-level array = depth 1; arrays of arrays = depth 2; deeper is rejected
// (no real writer nests at all, and unbounded depth means unbounded recursion).
constexpr int kMaxArrayDepth = 2;
// Each element becomes a GgufValue (48 bytes) even when it is 1 byte on disk,
// so the total is capped (2^23 elements = 400 MB at worst): a 1 GiB array of
// u8 would otherwise need 48 GiB. Real vocabularies (tokens + scores + types +
// merges) stay below 2^21.
constexpr uint64_t kMaxArrayElements = uint64_t(1) << 23;
// Counts are only proven to fit the file's bytes, and one byte on disk can
// become ~100 bytes in memory; containers therefore grow with what is actually
// parsed, beyond an initial reservation of at most this many entries.
constexpr uint64_t kMaxReserve = 4096;
// Smallest possible tensor info: name length, n_dims, one ne, type, offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Smallest possible key/value pair: key length, type, u8 value (an empty key
// is rejected later, with a clearer message).
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr size_t kMaxShownBytes = 64;  // of names inside error messages

// --- text helpers (escaping: model/common/printable.h) ----------------------------

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string quoted_name(std::string_view s) { return "'" + escaped_text(s, kMaxShownBytes) + "'"; }

std::string join(const std::string& a, const std::string& b) { return a + ": " + b; }

// --- type helpers -----------------------------------------------------------

bool valid_value_type(uint32_t raw) { return raw <= static_cast<uint32_t>(GgufType::F64); }

// Minimum bytes one value of `type` occupies on disk; bounds array counts.
uint64_t min_value_bytes(GgufType type) {
  switch (type) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::BOOL:
      return 1;
    case GgufType::U16:
    case GgufType::I16:
      return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32:
      return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64:
      return 8;
    case GgufType::STRING:
      return 8;  // length prefix
    case GgufType::ARRAY:
      return 4 + 8;  // element type + count
  }
  return 1;
}

std::string describe_type(const GgufValue& v) {
  std::string s(gguf_type_name(v.type));
  if (v.type == GgufType::ARRAY) s += "[" + std::string(gguf_type_name(v.elem_type)) + "]";
  return s;
}

uint64_t align_up(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) & ~(alignment - 1);  // alignment: power of two <= 2^31
}

// --- bounds-checked little-endian cursor -----------------------------------

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& name)
      : data_(data), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }
  // What is being read, for "truncated ... while reading <context>".
  void set_context(std::string context) { context_ = std::move(context); }
  std::string where() const { return " while reading " + context_; }

  [[noreturn]] void fail(const std::string& what) const { throw InputError(join(name_, what)); }

  uint8_t u8() { return static_cast<uint8_t>(read_le(1)); }
  uint16_t u16() { return static_cast<uint16_t>(read_le(2)); }
  uint32_t u32() { return static_cast<uint32_t>(read_le(4)); }
  uint64_t u64() { return read_le(8); }

  std::string_view string(const char* what) {
    const size_t at = pos_;
    const uint64_t len = u64();
    if (len > left()) {
      fail(std::string(what) + " length " + std::to_string(len) + " at offset " +
           std::to_string(at) + " exceeds the " + std::to_string(left()) + " bytes left" + where());
    }
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

  // Rejects `count` items of at least `min_bytes` each that cannot fit in the
  // rest of the file; called before any container is sized from `count`.
  void check_count(uint64_t count, uint64_t min_bytes, const char* what) const {
    if (count > left() / min_bytes) {
      fail(std::string(what) + " " + std::to_string(count) + " is too large for the " +
           std::to_string(left()) + " bytes left at offset " + std::to_string(pos_) +
           " (each needs at least " + std::to_string(min_bytes) + ")" + where());
    }
  }

 private:
  uint64_t read_le(size_t n) {
    if (n > left()) {
      fail("truncated at offset " + std::to_string(pos_) + where());
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
  std::string context_ = "header";
};

// --- metadata ---------------------------------------------------------------

struct ValueReader {
  Cursor& in;
  uint64_t array_budget = kMaxArrayElements;

  // A metadata value: its type tag, then the value.
  GgufValue tagged() { return value(type_tag(), 0); }

 private:
  GgufType type_tag() {
    const size_t at = in.pos();
    const uint32_t raw = in.u32();
    if (!valid_value_type(raw)) {
      in.fail("invalid value type " + std::to_string(raw) + " at offset " + std::to_string(at) +
              in.where());
    }
    return static_cast<GgufType>(raw);
  }
  GgufValue value(GgufType type, int depth);
  GgufValue array(int depth);
};

GgufValue ValueReader::value(GgufType type, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::U8:
      v.data = uint64_t{in.u8()};
      break;
    case GgufType::I8:
      v.data = int64_t{static_cast<int8_t>(in.u8())};
      break;
    case GgufType::U16:
      v.data = uint64_t{in.u16()};
      break;
    case GgufType::I16:
      v.data = int64_t{static_cast<int16_t>(in.u16())};
      break;
    case GgufType::U32:
      v.data = uint64_t{in.u32()};
      break;
    case GgufType::I32:
      v.data = int64_t{static_cast<int32_t>(in.u32())};
      break;
    case GgufType::U64:
      v.data = in.u64();
      break;
    case GgufType::I64:
      v.data = static_cast<int64_t>(in.u64());
      break;
    case GgufType::F32:
      v.data = double{std::bit_cast<float>(in.u32())};
      break;
    case GgufType::F64:
      v.data = std::bit_cast<double>(in.u64());
      break;
    case GgufType::BOOL: {
      const size_t at = in.pos();
      const uint8_t b = in.u8();
      if (b > 1) {
        in.fail("invalid bool value " + std::to_string(b) + " at offset " + std::to_string(at) +
                in.where());
      }
      v.data = b == 1;
      break;
    }
    case GgufType::STRING:
      v.data = std::string(in.string("string"));
      break;
    case GgufType::ARRAY: {
      GgufValue a = array(depth + 1);
      a.type = GgufType::ARRAY;
      return a;
    }
  }
  return v;
}

GgufValue ValueReader::array(int depth) {
  if (depth > kMaxArrayDepth) {
    in.fail("arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels at offset " +
            std::to_string(in.pos()) + in.where());
  }
  GgufValue v;
  v.elem_type = type_tag();
  const uint64_t n = in.u64();
  in.check_count(n, min_value_bytes(v.elem_type), "array count");
  if (n > array_budget) {
    in.fail("metadata arrays hold more than " + std::to_string(kMaxArrayElements) +
            " elements in total (limit of this reader)" + in.where());
  }
  array_budget -= n;
  std::vector<GgufValue> items;
  items.reserve(static_cast<size_t>(std::min(n, kMaxReserve)));
  for (uint64_t i = 0; i < n; ++i) items.push_back(value(v.elem_type, depth));
  v.data = std::move(items);
  return v;
}

void check_key(const Cursor& in, std::string_view key, size_t at) {
  if (key.empty()) in.fail("empty metadata key at offset " + std::to_string(at));
  if (!valid_utf8(key)) {
    in.fail("metadata key " + quoted_name(key) + " at offset " + std::to_string(at) +
            " is not valid UTF-8");
  }
}

void read_metadata(Cursor& in, uint64_t count, std::vector<std::pair<std::string, GgufValue>>& kv,
                   std::map<std::string, size_t, std::less<>>& index) {
  ValueReader values{in};
  kv.reserve(static_cast<size_t>(std::min(count, kMaxReserve)));
  for (uint64_t i = 0; i < count; ++i) {
    in.set_context("metadata key " + std::to_string(i));
    const size_t at = in.pos();
    std::string key(in.string("key"));
    check_key(in, key, at);
    if (index.count(key)) in.fail("duplicate metadata key " + quoted_name(key));
    in.set_context("value of metadata key " + quoted_name(key));
    GgufValue value = values.tagged();
    index.emplace(key, kv.size());
    kv.emplace_back(std::move(key), std::move(value));
  }
}

// --- tensors ----------------------------------------------------------------

struct TensorLayout {
  int64_t block_size;
  uint64_t block_bytes;
};

TensorLayout tensor_layout(const Cursor& in, const std::string& shown, uint32_t type_id) {
  const std::optional<TypeTraits> tt = type_traits(type_id);
  // A zero-sized block would make the size arithmetic meaningless.
  if (!tt || tt->block_size <= 0 || tt->block_bytes == 0) {
    in.fail("tensor " + shown + " has unknown type id " + std::to_string(type_id));
  }
  return {tt->block_size, tt->block_bytes};
}

// Reads n_dims and ne[]: every dimension positive, their product in int64.
void read_dims(Cursor& in, GgufTensor& t, const std::string& shown) {
  const uint32_t n_dims = in.u32();
  if (n_dims == 0 || n_dims > kMaxDims) {
    in.fail("tensor " + shown + " has " + std::to_string(n_dims) + " dimensions (must be 1 to 4)");
  }
  t.n_dims = static_cast<int>(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t ne = in.u64();
    if (ne == 0 || ne > uint64_t(std::numeric_limits<int64_t>::max())) {
      in.fail("tensor " + shown + " dimension " + std::to_string(d) + " is " + std::to_string(ne) +
              " (must be between 1 and 2^63-1)");
    }
    t.ne[d] = static_cast<int64_t>(ne);
  }
  int64_t elements = 1;
  for (int64_t ne : t.ne) {
    if (__builtin_mul_overflow(elements, ne, &elements)) {
      in.fail("tensor " + shown + " element count overflows int64");
    }
  }
}

// Bytes of the tensor's data: whole blocks per row, and no more than the file.
uint64_t data_bytes(const Cursor& in, const GgufTensor& t, const TensorLayout& layout,
                    const std::string& shown, size_t file_size) {
  if (t.ne[0] % layout.block_size != 0) {
    in.fail("tensor " + shown + " row of " + std::to_string(t.ne[0]) +
            " elements is not a whole number of blocks of " + std::to_string(layout.block_size));
  }
  uint64_t bytes = uint64_t(t.ne[0] / layout.block_size);
  bool overflow = __builtin_mul_overflow(bytes, layout.block_bytes, &bytes);
  for (int d = 1; d < 4; ++d) overflow |= __builtin_mul_overflow(bytes, uint64_t(t.ne[d]), &bytes);
  if (overflow || bytes > file_size) {
    in.fail("tensor " + shown + " needs more bytes than the whole file (" +
            std::to_string(file_size) + ")");
  }
  return bytes;
}

void read_tensor_infos(Cursor& in, uint64_t count, size_t file_size,
                       std::vector<GgufTensor>& tensors,
                       std::map<std::string, size_t, std::less<>>& index) {
  in.set_context("tensor infos");
  in.check_count(count, kMinTensorInfoBytes, "tensor count");
  tensors.reserve(static_cast<size_t>(std::min(count, kMaxReserve)));
  for (uint64_t i = 0; i < count; ++i) {
    in.set_context("tensor info " + std::to_string(i));
    GgufTensor t;
    t.name = std::string(in.string("tensor name"));
    const std::string shown = quoted_name(t.name);
    in.set_context("tensor info " + std::to_string(i) + " (" + shown + ")");
    if (index.count(t.name)) in.fail("duplicate tensor name " + shown);
    read_dims(in, t, shown);
    const uint32_t type_id = in.u32();
    const TensorLayout layout = tensor_layout(in, shown, type_id);
    t.type = static_cast<GgmlType>(type_id);
    t.bytes = data_bytes(in, t, layout, shown, file_size);
    t.offset = in.u64();
    index.emplace(t.name, tensors.size());
    tensors.push_back(std::move(t));
  }
}

// Checks each tensor's data range (aligned, inside the file) and points it
// into the buffer.
void place_tensors(const Cursor& in, const uint8_t* base, size_t size, uint64_t data_offset,
                   uint64_t alignment, std::vector<GgufTensor>& tensors) {
  for (GgufTensor& t : tensors) {
    const std::string shown = quoted_name(t.name);
    if (t.offset % alignment != 0) {
      in.fail("tensor " + shown + " offset " + std::to_string(t.offset) +
              " is not a multiple of the alignment " + std::to_string(alignment));
    }
    // Written as subtractions so that no sum can wrap around.
    if (data_offset > size || t.offset > size - data_offset ||
        t.bytes > size - data_offset - t.offset) {
      in.fail("tensor " + shown + " data (" + std::to_string(t.bytes) + " bytes at data offset " +
              std::to_string(t.offset) + ") extends past the end of the file (" +
              std::to_string(size) + " bytes)");
    }
    t.data = base + data_offset + t.offset;
  }
}

// Two tensors sharing bytes would let a write through one corrupt the other
// (and is never produced by a real writer).
void check_disjoint(const Cursor& in, const std::vector<GgufTensor>& tensors) {
  std::vector<const GgufTensor*> order;
  order.reserve(tensors.size());
  for (const GgufTensor& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    // Both ends are inside the file (place_tensors), so the sum cannot wrap.
    if (order[i - 1]->offset + order[i - 1]->bytes > order[i]->offset) {
      in.fail("tensors " + quoted_name(order[i - 1]->name) + " and " + quoted_name(order[i]->name) +
              " overlap");
    }
  }
}

// --- header -----------------------------------------------------------------

struct Header {
  uint32_t version;
  uint64_t tensor_count;
  uint64_t kv_count;
};

Header read_header(Cursor& in) {
  if (in.left() == 0) in.fail("empty file (not a GGUF file)");
  in.set_context("magic");
  std::string magic;
  for (int i = 0; i < 4; ++i) magic += static_cast<char>(in.u8());
  if (std::memcmp(magic.data(), kMagic, 4) != 0) {
    in.fail("not a GGUF file (magic '" + escaped_text(magic, 4) + "', expected 'GGUF')");
  }
  in.set_context("version");
  Header h{};
  h.version = in.u32();
  if (h.version != 2 && h.version != 3) {
    // A big-endian GGUF (allowed since v3) shows up as a byte-swapped version.
    const bool swapped = (h.version & 0x00FFFFFF) == 0 && (h.version >> 24) <= 3;
    in.fail("unsupported GGUF version " + std::to_string(h.version) +
            (swapped ? " (big-endian file?)" : "") + "; kvbench reads versions 2 and 3");
  }
  in.set_context("header");
  h.tensor_count = in.u64();
  h.kv_count = in.u64();
  in.check_count(h.tensor_count, kMinTensorInfoBytes, "tensor count");
  in.check_count(h.kv_count, kMinKvBytes, "metadata count");
  return h;
}

uint64_t alignment_of(const Cursor& in, const GgufValue* v) {
  if (v == nullptr) return kDefaultAlignment;
  const auto* u = std::get_if<uint64_t>(&v->data);
  const auto* i = std::get_if<int64_t>(&v->data);
  if (u == nullptr && i == nullptr) {
    in.fail("general.alignment has type " + describe_type(*v) + ", expected u32");
  }
  const uint64_t a = u ? *u : static_cast<uint64_t>(*i);
  if ((i && *i <= 0) || !std::has_single_bit(a) || a > kMaxAlignment) {
    in.fail("invalid general.alignment " + (u ? std::to_string(*u) : std::to_string(*i)) +
            " (must be a power of two between 1 and 2^31)");
  }
  return a;
}

// --- typed access helpers --------------------------------------------------

[[noreturn]] void type_error(std::string_view key, const GgufValue& v, const char* expected) {
  throw InputError("key '" + escaped_text(key, kMaxShownBytes) + "' has type " + describe_type(v) +
                   ", expected " + expected);
}

// Runs a GgufValue accessor and prefixes its error with the file's path.
template <class F>
auto with_path(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InputError& e) {
    throw InputError(join(path, e.what()));
  }
}

std::string display_number(double v, GgufType type) {
  char buf[64];
  // Shortest text that reads back to the same float/double.
  const auto r = type == GgufType::F32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                                       : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

constexpr size_t kMaxDisplayBytes = 60;  // of a string value in to_display

// Typed access to a value, for the GgufFile getters only: their errors name
// the key but not the file, which the getters add (with_path). Keeping them
// here means no caller can raise a metadata error that does not name the file.
uint64_t as_u64(const GgufValue& v, std::string_view key) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v.data)) {
    if (*i >= 0) return static_cast<uint64_t>(*i);
    throw InputError("key '" + escaped_text(key, kMaxShownBytes) + "' is negative (" +
                     std::to_string(*i) + "), expected an unsigned integer");
  }
  type_error(key, v, "an unsigned integer");
}

int64_t as_i64(const GgufValue& v, std::string_view key) {
  if (const auto* i = std::get_if<int64_t>(&v.data)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    if (*u <= uint64_t(std::numeric_limits<int64_t>::max())) return static_cast<int64_t>(*u);
    throw InputError("key '" + escaped_text(key, kMaxShownBytes) + "' value " + std::to_string(*u) +
                     " does not fit in i64");
  }
  type_error(key, v, "an integer");
}

double as_f64(const GgufValue& v, std::string_view key) {
  if (const auto* d = std::get_if<double>(&v.data)) return *d;
  // Integers are accepted: a float hyperparameter written as an int is harmless.
  if (const auto* i = std::get_if<int64_t>(&v.data)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&v.data)) return static_cast<double>(*u);
  type_error(key, v, "a number");
}

bool as_bool(const GgufValue& v, std::string_view key) {
  if (const auto* b = std::get_if<bool>(&v.data)) return *b;
  type_error(key, v, "bool");
}

const std::string& as_string(const GgufValue& v, std::string_view key) {
  if (const auto* s = std::get_if<std::string>(&v.data)) return *s;
  type_error(key, v, "string");
}

const std::vector<GgufValue>& as_array(const GgufValue& v, std::string_view key) {
  if (const auto* a = std::get_if<std::vector<GgufValue>>(&v.data)) return *a;
  type_error(key, v, "array");
}

}  // namespace

// --- GgufValue ----------------------------------------------------------------

std::string_view gguf_type_name(GgufType type) {
  static constexpr std::string_view names[] = {"u8",  "i8",  "u16",  "i16",    "u32",
                                               "i32", "f32", "bool", "string", "array",
                                               "u64", "i64", "f64"};
  return enum_name<GgufType::F64>(type, names, "invalid");
}

std::string GgufValue::to_display(size_t max_items) const {
  if (const auto* u = std::get_if<uint64_t>(&data)) return std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&data)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&data)) return display_number(*d, type);
  if (const auto* b = std::get_if<bool>(&data)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&data)) {
    std::string out = "\"" + escaped_text(*s, kMaxDisplayBytes) + "\"";
    if (s->size() > kMaxDisplayBytes) out += " (" + std::to_string(s->size()) + " bytes)";
    return out;
  }
  const auto& items = std::get<std::vector<GgufValue>>(data);
  std::string out = "[" + std::to_string(items.size()) + (items.size() == 1 ? " item" : " items");
  for (size_t k = 0; k < items.size() && k < max_items; ++k) {
    out += (k == 0 ? ": " : ", ") + items[k].to_display(max_items);
  }
  if (items.size() > max_items) out += max_items == 0 ? ": ..." : ", ...";
  return out + "]";
}

// --- GgufFile -------------------------------------------------------------------

namespace {

// Closes the descriptor on every path out of GgufFile::open.
struct FdGuard {
  int fd;
  ~FdGuard() { ::close(fd); }
};

[[noreturn]] void io_error(const std::string& path, const char* what, int err) {
  throw InputError(join(path, std::string(what) + ": " + std::strerror(err)));
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  struct stat st {};
  // Regular files only, refused before a FIFO could block the open.
  const FdGuard fd{open_regular_file(path, &st)};
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  if (st.st_size > 0) {  // mmap rejects length 0; an empty file fails in parse()
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.fd, 0);
    if (p == MAP_FAILED) io_error(path, "cannot map", errno);
    f->base_ = static_cast<const uint8_t*>(p);
    f->size_ = static_cast<size_t>(st.st_size);
    f->owns_mapping_ = true;
  }
  f->parse();  // the mapping outlives the descriptor
  return f;
}

std::unique_ptr<GgufFile> GgufFile::from_memory(const uint8_t* data, size_t size,
                                                const std::string& name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = name;
  f->base_ = data;
  f->size_ = size;
  f->parse();
  return f;
}

GgufFile::~GgufFile() {
  if (owns_mapping_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

void GgufFile::parse() {
  Cursor in(base_, size_, path_);
  const Header h = read_header(in);
  version_ = h.version;
  read_metadata(in, h.kv_count, kv_, kv_index_);
  alignment_ = alignment_of(in, find("general.alignment"));
  read_tensor_infos(in, h.tensor_count, size_, tensors_, tensor_index_);
  // The data section starts at the next multiple of the alignment; a file
  // without tensors may end before it (llama.cpp accepts that too).
  data_offset_ = align_up(in.pos(), alignment_);
  place_tensors(in, base_, size_, data_offset_, alignment_, tensors_);
  check_disjoint(in, tensors_);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

const GgufValue& require(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  // No path here: every caller runs inside with_path.
  if (v == nullptr) throw InputError("missing key '" + escaped_text(key, kMaxShownBytes) + "'");
  return *v;
}

uint32_t to_u32(const GgufValue& v, std::string_view key) {
  const uint64_t x = as_u64(v, key);
  if (x > std::numeric_limits<uint32_t>::max()) {
    throw InputError("key '" + escaped_text(key, kMaxShownBytes) + "' value " + std::to_string(x) +
                     " does not fit in u32");
  }
  return static_cast<uint32_t>(x);
}

float to_f32(const GgufValue& v, std::string_view key) {
  const double x = as_f64(v, key);
  if (std::isfinite(x) && std::fabs(x) > double(std::numeric_limits<float>::max())) {
    throw InputError("key '" + escaped_text(key, kMaxShownBytes) + "' value " +
                     display_number(x, GgufType::F64) + " does not fit in f32");
  }
  return static_cast<float>(x);
}

// Checks the element type of an array, e.g. tokens must be strings.
const std::vector<GgufValue>& typed_array(const GgufValue& v, std::string_view key,
                                          bool (*ok)(GgufType), const char* expected) {
  const auto& items = as_array(v, key);
  if (!ok(v.elem_type)) type_error(key, v, expected);
  return items;
}

bool is_float_type(GgufType t) { return t == GgufType::F32 || t == GgufType::F64; }
bool is_bool_type(GgufType t) { return t == GgufType::BOOL; }
bool is_string_type(GgufType t) { return t == GgufType::STRING; }
bool is_int_type(GgufType t) {
  switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::U16:
    case GgufType::I16:
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::U64:
    case GgufType::I64:
      return true;
    default:
      return false;
  }
}

std::string element_key(std::string_view key, size_t i) {
  return std::string(key) + "[" + std::to_string(i) + "]";
}

// Element i of array `key` as i32; the key text is built only for errors.
int32_t to_i32(const GgufValue& v, std::string_view key, size_t i) {
  const auto* s = std::get_if<int64_t>(&v.data);
  const int64_t x = s ? *s : as_i64(v, element_key(key, i));
  if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
    throw InputError("key '" + escaped_text(element_key(key, i), kMaxShownBytes) + "' value " +
                     std::to_string(x) + " does not fit in i32");
  }
  return static_cast<int32_t>(x);
}

}  // namespace

uint64_t GgufFile::get_u64(std::string_view key) const {
  return with_path(path_, [&] { return as_u64(require(*this, key), key); });
}

int64_t GgufFile::get_i64(std::string_view key) const {
  return with_path(path_, [&] { return as_i64(require(*this, key), key); });
}

uint32_t GgufFile::get_u32(std::string_view key) const {
  return with_path(path_, [&] { return to_u32(require(*this, key), key); });
}

float GgufFile::get_f32(std::string_view key) const {
  return with_path(path_, [&] { return to_f32(require(*this, key), key); });
}

bool GgufFile::get_bool(std::string_view key) const {
  return with_path(path_, [&] { return as_bool(require(*this, key), key); });
}

const std::string& GgufFile::get_string(std::string_view key) const {
  return with_path(path_,
                   [&]() -> const std::string& { return as_string(require(*this, key), key); });
}

uint32_t GgufFile::get_u32_or(std::string_view key, uint32_t fallback) const {
  const GgufValue* v = find(key);
  return v ? with_path(path_, [&] { return to_u32(*v, key); }) : fallback;
}

float GgufFile::get_f32_or(std::string_view key, float fallback) const {
  const GgufValue* v = find(key);
  return v ? with_path(path_, [&] { return to_f32(*v, key); }) : fallback;
}

bool GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  const GgufValue* v = find(key);
  return v ? with_path(path_, [&] { return as_bool(*v, key); }) : fallback;
}

std::string GgufFile::get_string_or(std::string_view key, std::string_view fallback) const {
  const GgufValue* v = find(key);
  return v ? with_path(path_, [&] { return as_string(*v, key); }) : std::string(fallback);
}

std::vector<std::string_view> GgufFile::get_string_array(std::string_view key) const {
  return with_path(path_, [&] {
    const auto& items = typed_array(require(*this, key), key, is_string_type, "array[string]");
    std::vector<std::string_view> out;
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const auto* s = std::get_if<std::string>(&items[i].data);
      out.emplace_back(s ? *s : as_string(items[i], element_key(key, i)));
    }
    return out;
  });
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  return with_path(path_, [&] {
    const auto& items = typed_array(require(*this, key), key, is_float_type, "array[f32]");
    std::vector<float> out;
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const auto* d = std::get_if<double>(&items[i].data);
      out.push_back(d && std::fabs(*d) <= double(std::numeric_limits<float>::max())
                        ? static_cast<float>(*d)
                        : to_f32(items[i], element_key(key, i)));
    }
    return out;
  });
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  return with_path(path_, [&] {
    const auto& items = typed_array(require(*this, key), key, is_int_type, "array[i32]");
    std::vector<int32_t> out;
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      out.push_back(to_i32(items[i], key, i));
    }
    return out;
  });
}

std::vector<bool> GgufFile::get_bool_array(std::string_view key) const {
  return with_path(path_, [&] {
    const auto& items = typed_array(require(*this, key), key, is_bool_type, "array[bool]");
    std::vector<bool> out;
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) out.push_back(as_bool(items[i], element_key(key, i)));
    return out;
  });
}

}  // namespace kvbench
