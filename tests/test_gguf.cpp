// GGUF reader/writer: round trips through the writer, and hand-built broken
// files that must each fail with a specific one-line InputError.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/sha256.h"
#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/gguf/gguf_writer.h"
#include "model/testing/tiny_model.h"

namespace kvbench {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr uint64_t k2p60 = uint64_t(1) << 60;

// --- building blocks ----------------------------------------------------------

// Hand-assembles GGUF bytes, so tests can say exactly what is on disk.
class Raw {
 public:
  Raw& u8(uint8_t v) {
    b_.push_back(v);
    return *this;
  }
  Raw& u32(uint32_t v) { return le(v, 4); }
  Raw& u64(uint64_t v) { return le(v, 8); }
  Raw& str(std::string_view s) {
    u64(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Raw& fill(size_t n, uint8_t v = 0) {
    b_.insert(b_.end(), n, v);
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b_.insert(b_.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Raw& kv_u32(std::string_view key, uint32_t v) {
    return str(key).u32(uint32_t(GgufType::U32)).u32(v);
  }
  Raw& kv_string(std::string_view key, std::string_view v) {
    return str(key).u32(uint32_t(GgufType::STRING)).str(v);
  }
  Raw& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(uint32_t(ne.size()));
    for (uint64_t n : ne) u64(n);
    return u32(type).u64(offset);
  }
  Raw& pad(size_t alignment) { return fill((alignment - b_.size() % alignment) % alignment); }
  const Bytes& bytes() const { return b_; }

 private:
  Raw& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b_.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  Bytes b_;
};

std::unique_ptr<GgufFile> parse(const Bytes& b, const std::string& name = "t.gguf") {
  return GgufFile::from_memory(b.data(), b.size(), name);
}

// The InputError message of parsing `b`, checking the shared message rules.
std::string parse_error(const Bytes& b, const std::string& name = "bad.gguf") {
  try {
    parse(b, name);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(name + ": ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "file parsed but should not have";
  return "";
}

#define EXPECT_PARSE_ERROR(bytes, substring)                                   \
  do {                                                                         \
    const std::string msg_ = parse_error(bytes);                               \
    EXPECT_NE(msg_.find(substring), std::string::npos) << "message: " << msg_; \
  } while (0)

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

GgufValue scalar(GgufType t, decltype(GgufValue::data) d) {
  GgufValue v;
  v.type = t;
  v.data = std::move(d);
  return v;
}

GgufValue array(GgufType elem, std::vector<GgufValue> items) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = elem;
  v.data = std::move(items);
  return v;
}

void expect_same(const GgufValue& a, const GgufValue& b, const std::string& where) {
  EXPECT_EQ(a.type, b.type) << where;
  ASSERT_EQ(a.data.index(), b.data.index()) << where;
  if (const auto* x = std::get_if<std::vector<GgufValue>>(&a.data)) {
    EXPECT_EQ(a.elem_type, b.elem_type) << where;
    const auto& y = std::get<std::vector<GgufValue>>(b.data);
    ASSERT_EQ(x->size(), y.size()) << where;
    for (size_t i = 0; i < x->size(); ++i)
      expect_same((*x)[i], y[i], where + "[" + std::to_string(i) + "]");
  } else if (const auto* d = std::get_if<double>(&a.data)) {
    // Bit-exact, so that -0.0 and NaN payloads count too.
    EXPECT_EQ(std::bit_cast<uint64_t>(*d), std::bit_cast<uint64_t>(std::get<double>(b.data)))
        << where;
  } else if (const auto* u = std::get_if<uint64_t>(&a.data)) {
    EXPECT_EQ(*u, std::get<uint64_t>(b.data)) << where;
  } else if (const auto* i = std::get_if<int64_t>(&a.data)) {
    EXPECT_EQ(*i, std::get<int64_t>(b.data)) << where;
  } else if (const auto* t = std::get_if<bool>(&a.data)) {
    EXPECT_EQ(*t, std::get<bool>(b.data)) << where;
  } else {
    EXPECT_EQ(std::get<std::string>(a.data), std::get<std::string>(b.data)) << where;
  }
}

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = uint8_t(rng());
  return b;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

std::string temp_dir() {
  std::string pattern = ::testing::TempDir() + "gguf_test_XXXXXX";
  const char* dir = ::mkdtemp(pattern.data());
  if (dir == nullptr) throw std::runtime_error("mkdtemp failed");
  return dir;
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every one of the 13 value types, including arrays and extreme values.
std::vector<std::pair<std::string, GgufValue>> all_value_types() {
  using T = GgufType;
  std::vector<GgufValue> ints;
  for (int64_t x : {int64_t{INT32_MIN}, int64_t{-1}, int64_t{0}, int64_t{INT32_MAX}})
    ints.push_back(scalar(T::I32, x));
  return {
      {"t.u8", scalar(T::U8, uint64_t{255})},
      {"t.i8", scalar(T::I8, int64_t{-128})},
      {"t.u16", scalar(T::U16, uint64_t{65535})},
      {"t.i16", scalar(T::I16, int64_t{-32768})},
      {"t.u32", scalar(T::U32, uint64_t{4000000000u})},
      {"t.i32", scalar(T::I32, int64_t{-2000000000})},
      {"t.f32", scalar(T::F32, double{0.1f})},
      {"t.bool", scalar(T::BOOL, true)},
      {"t.string", scalar(T::STRING, std::string("h\xc3\xa9llo\nworld"))},
      {"t.u64", scalar(T::U64, std::numeric_limits<uint64_t>::max())},
      {"t.i64", scalar(T::I64, std::numeric_limits<int64_t>::min())},
      {"t.i64.neg", scalar(T::I64, int64_t{-5})},
      {"t.f64", scalar(T::F64, -1e300)},
      {"t.f64.tiny", scalar(T::F64, 5e-324)},
      {"a.string",
       array(T::STRING, {scalar(T::STRING, std::string("a")), scalar(T::STRING, std::string()),
                         scalar(T::STRING, std::string(300, 'z'))})},
      {"a.i32", array(T::I32, ints)},
      {"a.f32", array(T::F32, {scalar(T::F32, 1.5), scalar(T::F32, -0.0),
                               scalar(T::F32, double{INFINITY})})},
      {"a.bool", array(T::BOOL, {scalar(T::BOOL, true), scalar(T::BOOL, false)})},
      {"a.u8", array(T::U8, {scalar(T::U8, uint64_t{0}), scalar(T::U8, uint64_t{255})})},
      {"a.i8", array(T::I8, {scalar(T::I8, int64_t{-1})})},
      {"a.u16", array(T::U16, {scalar(T::U16, uint64_t{7})})},
      {"a.i16", array(T::I16, {scalar(T::I16, int64_t{-7})})},
      {"a.u32", array(T::U32, {scalar(T::U32, uint64_t{UINT32_MAX})})},
      {"a.u64", array(T::U64, {scalar(T::U64, std::numeric_limits<uint64_t>::max())})},
      {"a.i64", array(T::I64, {scalar(T::I64, int64_t{-3}),
                               scalar(T::I64, std::numeric_limits<int64_t>::max())})},
      {"a.f64", array(T::F64, {scalar(T::F64, 0.1), scalar(T::F64, -2.5)})},
      {"a.empty", array(T::U32, {})},
      {"a.nested", array(T::ARRAY, {array(T::I32, ints), array(T::I32, {})})},
  };
}

// --- round trips ----------------------------------------------------------------

TEST(GgufRoundTrip, EveryValueTypeSurvives) {
  GgufWriter w;
  const auto kvs = all_value_types();
  for (const auto& [k, v] : kvs) w.set(k, v);
  const Bytes b = w.to_bytes();
  const auto f = parse(b);
  EXPECT_EQ(f->version(), 3u);
  ASSERT_EQ(f->metadata().size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].first, kvs[i].first);  // file order kept
    expect_same(f->metadata()[i].second, kvs[i].second, kvs[i].first);
  }
  EXPECT_EQ(f->get_u64("t.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f->get_i64("t.i64.neg"), -5);
  EXPECT_EQ(f->get_string("t.string"), "h\xc3\xa9llo\nworld");
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_FALSE(f->has("general.alignment"));  // default alignment is not written
}

struct TensorSpec {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;
  size_t bytes;
};

TEST(GgufRoundTrip, TensorsKeepShapesOffsetsAndBytes) {
  const std::vector<TensorSpec> specs = {
      {"f32.vec", GgmlType::F32, {3}, 12},
      {"f16.mat", GgmlType::F16, {8, 2}, 32},
      {"q8_0.mat", GgmlType::Q8_0, {64, 2}, 2 * 2 * 34},
      {"q4_0.3d", GgmlType::Q4_0, {32, 1, 2}, 2 * 18},
      {"i32.vec", GgmlType::I32, {5}, 20},
      {"q4_k.row", GgmlType::Q4_K, {256}, 144},
      {"bf16.4d", GgmlType::BF16, {4, 3, 2, 1}, 48},
  };
  GgufWriter w;
  w.set_alignment(64);
  w.set_string("general.name", "tensors");
  std::vector<Bytes> data;
  for (size_t i = 0; i < specs.size(); ++i) {
    data.push_back(random_bytes(specs[i].bytes, uint32_t(i)));
    w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, data[i].data(), data[i].size());
  }
  const Bytes b = w.to_bytes();
  const auto f = parse(b);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_u32("general.alignment"), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->file_size(), b.size());
  ASSERT_EQ(f->tensors().size(), specs.size());
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const GgufTensor& t = f->tensors()[i];
    SCOPED_TRACE(specs[i].name);
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.type, specs[i].type);
    ASSERT_EQ(t.n_dims, int(specs[i].ne.size()));
    for (int d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], d < t.n_dims ? specs[i].ne[d] : 1);
    EXPECT_EQ(t.offset, expected_offset);
    EXPECT_EQ(t.bytes, specs[i].bytes);
    EXPECT_EQ(t.data, b.data() + f->data_offset() + t.offset);
    EXPECT_EQ(std::memcmp(t.data, data[i].data(), t.bytes), 0);
    EXPECT_EQ(f->find_tensor(specs[i].name), &t);
    expected_offset = align_up(expected_offset + specs[i].bytes, 64);
  }
  EXPECT_EQ(f->find_tensor("missing"), nullptr);
}

TEST(GgufRoundTrip, AddTensorF32StoresValues) {
  GgufWriter w;
  const std::vector<float> values = {0.5f, -2.0f, 3.0f, 0.0f, 1.0f, -0.25f};
  w.add_tensor_f32("f32", GgmlType::F32, {3, 2}, values);
  w.add_tensor_f32("f16", GgmlType::F16, {6}, values);  // all exactly representable
  const Bytes b = w.to_bytes();
  const auto f = parse(b);
  std::vector<float> got(6);
  std::memcpy(got.data(), f->find_tensor("f32")->data, 24);
  EXPECT_EQ(got, values);
  const GgufTensor* h = f->find_tensor("f16");
  ASSERT_NE(h, nullptr);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, h->data + 2 * i, 2);
    EXPECT_EQ(fp16_to_fp32(bits), values[i]) << i;
  }
  EXPECT_THROW(w.add_tensor_f32("short", GgmlType::F32, {4}, values), std::invalid_argument);
}

TEST(GgufRoundTrip, WriteIsAtomicAndOpenMapsTheFile) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/m.gguf";
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  const Bytes payload = random_bytes(40, 7);
  w.add_tensor("w", GgmlType::F32, {10}, payload.data(), payload.size());
  w.write(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const auto f = GgufFile::open(path);
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->file_size(), w.to_bytes().size());
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  ASSERT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(std::memcmp(f->tensors()[0].data, payload.data(), payload.size()), 0);
  w.set_string("general.architecture", "mistral");  // overwrite through rename
  w.write(path);
  EXPECT_EQ(GgufFile::open(path)->get_string("general.architecture"), "mistral");
  std::filesystem::remove_all(dir);
}

// --- streaming writes ---------------------------------------------------------

TEST(GgufWriterStream, GeneratedTensorsAreFilledInRowChunksAndMatchToBytes) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  const std::vector<float> small = {1.0f, 2.0f, 3.0f};  // 12 bytes: padding follows
  w.add_tensor_f32("small", GgmlType::F32, {3}, small);
  // 2048 rows of 1024 f32 = 8 MiB: more than one chunk.
  const int64_t cols = 1024, rows = 2048;
  std::vector<std::pair<int64_t, int64_t>> calls;
  w.add_tensor_rows("big", GgmlType::F32, {cols, rows},
                    [&](uint8_t* dst, int64_t first, int64_t n) {
                      calls.emplace_back(first, n);
                      for (int64_t r = 0; r < n; ++r) {
                        for (int64_t c = 0; c < cols; ++c) {
                          const float v = static_cast<float>((first + r) * cols + c);
                          std::memcpy(dst + (r * cols + c) * 4, &v, 4);
                        }
                      }
                    });
  // Quantized rows (2 blocks of 18 bytes each): the chunk holds whole rows.
  w.add_tensor_rows("q", GgmlType::Q4_0, {64, 3}, [](uint8_t* dst, int64_t first, int64_t n) {
    for (int64_t i = 0; i < n * 36; ++i) dst[i] = static_cast<uint8_t>(first * 36 + i);
  });
  EXPECT_THROW(w.add_tensor_rows("big", GgmlType::F32, {4}, [](uint8_t*, int64_t, int64_t) {}),
               std::invalid_argument);
  EXPECT_THROW(w.add_tensor_rows("bad", GgmlType::Q4_0, {48}, [](uint8_t*, int64_t, int64_t) {}),
               std::invalid_argument);  // not whole blocks

  const std::string dir = temp_dir();
  const std::string path = dir + "/stream.gguf";
  w.write(path);
  // The rows of "big" were produced in order, once, in chunks of at most kFillChunkBytes.
  int64_t next = 0;
  for (const auto& [first, n] : calls) {
    EXPECT_EQ(first, next);
    EXPECT_LE(static_cast<size_t>(n) * cols * 4, GgufWriter::kFillChunkBytes);
    next = first + n;
  }
  EXPECT_EQ(next, rows);
  EXPECT_GE(calls.size(), 2u);

  calls.clear();
  EXPECT_EQ(read_bytes(path), w.to_bytes());
  EXPECT_EQ(calls.size(),
            (rows * cols * 4 + GgufWriter::kFillChunkBytes - 1) / GgufWriter::kFillChunkBytes);
  const auto f = GgufFile::open(path);
  ASSERT_EQ(f->tensors().size(), 3u);
  const GgufTensor* q = f->find_tensor("q");
  ASSERT_NE(q, nullptr);
  for (size_t i = 0; i < 3 * 36; ++i) ASSERT_EQ(q->data[i], static_cast<uint8_t>(i)) << i;
  const GgufTensor* big = f->find_tensor("big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->offset % 32, 0u);
  std::vector<float> got(static_cast<size_t>(cols * rows));
  std::memcpy(got.data(), big->data, got.size() * 4);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(i)) << i;
  std::filesystem::remove_all(dir);
}

TEST(TinyModelFile, BytesAreUnchangedAndTheStreamedFileIsTheImage) {
  // sha256 of the files `kvbench tiny-model` wrote before the streaming
  // writer (commit cf33727): the tests' numbers depend on these bytes.
  struct Case {
    TinyVocabKind vocab;
    bool tied;
    uint64_t seed;
    const char* sha256;
  };
  const Case cases[] = {
      {TinyVocabKind::Bpe, true, 1,
       "f08771979fd2c722e0b28655888ec659836377943d48c9113a2b5264af11996f"},
      {TinyVocabKind::Spm, true, 1,
       "c00b82e428b3059a3a3e294cb8a1dd47f136c261ff5e0ada49c8ce39c0889e7b"},
      {TinyVocabKind::Bpe, false, 1,
       "756ea67e8a15354bb4078f1b1d12cd576330602976a2f3617667d161be37a0c6"},
      {TinyVocabKind::Spm, false, 7,
       "70d9fcbdf3f94ca0d5b49153ba5df15237394da6a68a7394907117b37350bb7d"},
  };
  for (const Case& c : cases) {
    TinyModelOptions o;
    o.vocab = c.vocab;
    o.tied_output = c.tied;
    o.seed = c.seed;
    const std::vector<uint8_t> image = make_tiny_model(o);
    EXPECT_EQ(sha256_hex(image.data(), image.size()), c.sha256);
    const std::string dir = temp_dir();
    write_tiny_model(dir + "/tiny.gguf", o);
    EXPECT_EQ(read_bytes(dir + "/tiny.gguf"), image);
    std::filesystem::remove_all(dir);
  }
}

TEST(GgufRoundTrip, Version2IsAccepted) {
  GgufWriter w;
  w.set_u32("x", 1);
  Bytes b = w.to_bytes();
  b[4] = 2;
  EXPECT_EQ(parse(b)->version(), 2u);
}

TEST(GgufRoundTrip, FileWithoutTensorsMayEndBeforePadding) {
  const Bytes b = Raw().header(0, 1).kv_u32("a", 1).bytes();  // 45 bytes, no padding
  const auto f = parse(b);
  EXPECT_EQ(f->get_u32("a"), 1u);
  EXPECT_TRUE(f->tensors().empty());
}

// --- writer ---------------------------------------------------------------------

TEST(GgufWriter, SetReplacesAKeyInPlace) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "one");
  const Bytes b = w.to_bytes();
  const auto f = parse(b);
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "a");
  EXPECT_EQ(f->get_string("a"), "one");
}

TEST(GgufWriter, RejectsValuesThatDoNotMatchTheirType) {
  GgufWriter w;
  EXPECT_THROW(w.set("x", scalar(GgufType::U8, uint64_t{256})), std::invalid_argument);
  EXPECT_THROW(w.set("x", scalar(GgufType::I8, int64_t{-129})), std::invalid_argument);
  EXPECT_THROW(w.set("x", scalar(GgufType::U32, int64_t{-1})), std::invalid_argument);
  EXPECT_THROW(w.set("x", scalar(GgufType::STRING, uint64_t{1})), std::invalid_argument);
  EXPECT_THROW(w.set("x", array(GgufType::I32, {scalar(GgufType::U32, uint64_t{1})})),
               std::invalid_argument);
  EXPECT_THROW(w.set_alignment(0), std::invalid_argument);
  EXPECT_THROW(w.set_alignment(48), std::invalid_argument);
  EXPECT_TRUE(parse(w.to_bytes())->metadata().empty());  // nothing was stored
}

TEST(GgufWriter, RejectsTensorsThatDoNotMatchTheirShape) {
  GgufWriter w;
  const Bytes b(64);
  EXPECT_THROW(w.add_tensor("a", GgmlType::F32, {4}, b.data(), 15), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("a", GgmlType::F32, {}, b.data(), 0), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("a", GgmlType::F32, {1, 1, 1, 1, 1}, b.data(), 4),
               std::invalid_argument);
  EXPECT_THROW(w.add_tensor("a", GgmlType::F32, {0}, b.data(), 0), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("a", GgmlType::Q8_0, {16}, b.data(), 17), std::invalid_argument);
  w.add_tensor("a", GgmlType::F32, {4}, b.data(), 16);
  EXPECT_THROW(w.add_tensor("a", GgmlType::F32, {4}, b.data(), 16), std::invalid_argument);
}

TEST(GgufWriter, WriteFailureNamesThePath) {
  GgufWriter w;
  const std::string path = "/nonexistent-dir-kvbench/x.gguf";
  const std::string msg = error_of([&] { w.write(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot create"), std::string::npos) << msg;
}

// --- getters ----------------------------------------------------------------------

class GgufGetters : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter w;
    w.set_u32("u32", 7);
    w.set_u64("big", uint64_t(1) << 32);
    w.set_i32("neg", -1);
    w.set("u8", scalar(GgufType::U8, uint64_t{9}));
    w.set("umax", scalar(GgufType::U64, std::numeric_limits<uint64_t>::max()));
    w.set_f32("f32", 0.25f);
    w.set("f64", scalar(GgufType::F64, 1e300));
    w.set_bool("yes", true);
    w.set_string("name", "tiny");
    w.set_string_array("tokens", {"<s>", "a", "b"});
    w.set_f32_array("scores", {0.5f, -1.0f});
    w.set_i32_array("types", {1, 2, 3});
    w.set("u32s", array(GgufType::U32, {scalar(GgufType::U32, uint64_t{3000000000u})}));
    w.set("flags",
          array(GgufType::BOOL, {scalar(GgufType::BOOL, true), scalar(GgufType::BOOL, false)}));
    bytes_ = w.to_bytes();
    f_ = parse(bytes_, "g.gguf");
  }
  Bytes bytes_;
  std::unique_ptr<GgufFile> f_;
};

TEST_F(GgufGetters, RequiredGettersReturnValues) {
  EXPECT_EQ(f_->get_u32("u32"), 7u);
  EXPECT_EQ(f_->get_u32("u8"), 9u);
  EXPECT_EQ(f_->get_u64("big"), uint64_t(1) << 32);
  EXPECT_EQ(f_->get_i64("neg"), -1);
  EXPECT_EQ(f_->get_f32("f32"), 0.25f);
  EXPECT_EQ(f_->get_f32("u32"), 7.0f);  // integers widen to float
  EXPECT_TRUE(f_->get_bool("yes"));
  EXPECT_EQ(f_->get_string("name"), "tiny");
  EXPECT_TRUE(f_->has("name"));
  EXPECT_FALSE(f_->has("nope"));
  EXPECT_EQ(f_->find("nope"), nullptr);
}

TEST_F(GgufGetters, ErrorsNameThePathAndTheKey) {
  EXPECT_EQ(error_of([&] { f_->get_u32("nope"); }), "g.gguf: missing key 'nope'");
  EXPECT_EQ(error_of([&] { f_->get_u32("big"); }),
            "g.gguf: key 'big' value 4294967296 does not fit in u32");
  EXPECT_EQ(error_of([&] { f_->get_u32("neg"); }),
            "g.gguf: key 'neg' is negative (-1), expected an unsigned integer");
  EXPECT_EQ(error_of([&] { f_->get_u32("name"); }),
            "g.gguf: key 'name' has type string, expected an unsigned integer");
  EXPECT_EQ(error_of([&] { f_->get_i64("umax"); }),
            "g.gguf: key 'umax' value 18446744073709551615 does not fit in i64");
  EXPECT_EQ(error_of([&] { f_->get_f32("f64"); }),
            "g.gguf: key 'f64' value 1e+300 does not fit in f32");
  EXPECT_EQ(error_of([&] { f_->get_f32("name"); }),
            "g.gguf: key 'name' has type string, expected a number");
  EXPECT_EQ(error_of([&] { f_->get_bool("u32"); }),
            "g.gguf: key 'u32' has type u32, expected bool");
  EXPECT_EQ(error_of([&] { f_->get_string("tokens"); }),
            "g.gguf: key 'tokens' has type array[string], expected string");
}

TEST_F(GgufGetters, OptionalGettersFallBackOnlyWhenAbsent) {
  EXPECT_EQ(f_->get_u32_or("nope", 5), 5u);
  EXPECT_EQ(f_->get_u32_or("u32", 5), 7u);
  EXPECT_EQ(f_->get_f32_or("nope", 1.5f), 1.5f);
  EXPECT_EQ(f_->get_f32_or("f32", 1.5f), 0.25f);
  EXPECT_FALSE(f_->get_bool_or("nope", false));
  EXPECT_TRUE(f_->get_bool_or("yes", false));
  EXPECT_EQ(f_->get_string_or("nope", "dflt"), "dflt");
  EXPECT_EQ(f_->get_string_or("name", "dflt"), "tiny");
  EXPECT_THROW(f_->get_u32_or("name", 5), InputError);
  EXPECT_THROW(f_->get_f32_or("tokens", 1), InputError);
  EXPECT_THROW(f_->get_bool_or("u32", false), InputError);
  EXPECT_THROW(f_->get_string_or("u32", ""), InputError);
}

TEST_F(GgufGetters, ArrayGettersCheckElementTypes) {
  const std::vector<std::string_view> tokens = f_->get_string_array("tokens");
  EXPECT_EQ(tokens, (std::vector<std::string_view>{"<s>", "a", "b"}));
  EXPECT_EQ(f_->get_f32_array("scores"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(f_->get_i32_array("types"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(error_of([&] { f_->get_string_array("types"); }),
            "g.gguf: key 'types' has type array[i32], expected array[string]");
  EXPECT_EQ(error_of([&] { f_->get_f32_array("tokens"); }),
            "g.gguf: key 'tokens' has type array[string], expected array[f32]");
  EXPECT_EQ(error_of([&] { f_->get_i32_array("scores"); }),
            "g.gguf: key 'scores' has type array[f32], expected array[i32]");
  EXPECT_EQ(error_of([&] { f_->get_i32_array("u32s"); }),
            "g.gguf: key 'u32s[0]' value 3000000000 does not fit in i32");
  EXPECT_EQ(error_of([&] { f_->get_i32_array("u32"); }),
            "g.gguf: key 'u32' has type u32, expected array");
  EXPECT_EQ(error_of([&] { f_->get_string_array("nope"); }), "g.gguf: missing key 'nope'");
  EXPECT_EQ(f_->get_bool_array("flags"), (std::vector<bool>{true, false}));
  EXPECT_EQ(error_of([&] { f_->get_bool_array("u32s"); }),
            "g.gguf: key 'u32s' has type array[u32], expected array[bool]");
  EXPECT_EQ(error_of([&] { f_->get_bool_array("yes"); }),
            "g.gguf: key 'yes' has type bool, expected array");
}

// --- display ----------------------------------------------------------------------

TEST(GgufDisplay, Scalars) {
  EXPECT_EQ(scalar(GgufType::U32, uint64_t{42}).to_display(), "42");
  EXPECT_EQ(scalar(GgufType::U64, std::numeric_limits<uint64_t>::max()).to_display(),
            "18446744073709551615");
  EXPECT_EQ(scalar(GgufType::I64, int64_t{-5}).to_display(), "-5");
  EXPECT_EQ(scalar(GgufType::F32, double{0.1f}).to_display(), "0.1");  // shortest float text
  EXPECT_EQ(scalar(GgufType::F64, 0.1).to_display(), "0.1");
  EXPECT_EQ(scalar(GgufType::F64, 1e-5).to_display(), "1e-05");
  EXPECT_EQ(scalar(GgufType::BOOL, false).to_display(), "false");
}

TEST(GgufDisplay, StringsAreQuotedEscapedAndTruncated) {
  EXPECT_EQ(scalar(GgufType::STRING, std::string("llama")).to_display(), "\"llama\"");
  EXPECT_EQ(scalar(GgufType::STRING, std::string("a\nb\x01")).to_display(), "\"a\\nb\\x01\"");
  EXPECT_EQ(scalar(GgufType::STRING, std::string("\xc3\xa9")).to_display(),
            "\"\xc3\xa9\"");  // UTF-8 kept
  EXPECT_EQ(scalar(GgufType::STRING, std::string("\xff")).to_display(), "\"\\xff\"");
  // Only the invalid byte is escaped; C1 controls (here U+009B, CSI) are too.
  EXPECT_EQ(scalar(GgufType::STRING, std::string("\xc3\xa9\xff\xc3\xa9")).to_display(),
            "\"\xc3\xa9\\xff\xc3\xa9\"");
  EXPECT_EQ(scalar(GgufType::STRING, std::string("\xc2\x9b"
                                                 "2J"))
                .to_display(),
            "\"\\xc2\\x9b2J\"");
  const std::string shown = scalar(GgufType::STRING, std::string(100, 'x')).to_display();
  EXPECT_EQ(shown, "\"" + std::string(60, 'x') + "...\" (100 bytes)");
}

TEST(GgufDisplay, ArraysShowCountAndFirstItems) {
  std::vector<GgufValue> items;
  for (uint64_t i = 0; i < 10; ++i) items.push_back(scalar(GgufType::U32, i));
  EXPECT_EQ(array(GgufType::U32, items).to_display(3), "[10 items: 0, 1, 2, ...]");
  EXPECT_EQ(array(GgufType::U32, items).to_display(10), "[10 items: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
  EXPECT_EQ(array(GgufType::U32, {}).to_display(), "[0 items]");
  EXPECT_EQ(array(GgufType::STRING, {scalar(GgufType::STRING, std::string("a"))}).to_display(),
            "[1 item: \"a\"]");
  const GgufValue nested = array(GgufType::ARRAY, {array(GgufType::U32, items)});
  EXPECT_EQ(nested.to_display(2), "[1 item: [10 items: 0, 1, ...]]");
}

// --- bad files ----------------------------------------------------------------------

// A small valid file: metadata of several kinds and two tensors.
GgufWriter small_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 1);
  w.set_string_array("tokenizer.ggml.tokens", {"<s>", "hello"});
  w.set_f32_array("tokenizer.ggml.scores", {0.0f, -1.0f});
  const Bytes a = random_bytes(4 * 8, 1), q = random_bytes(34, 2);
  w.add_tensor("blk.0.attn_norm.weight", GgmlType::F32, {8}, a.data(), a.size());
  w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, {32, 1}, q.data(), q.size());
  return w;
}

TEST(GgufBadFile, TruncatedAtEveryOffset) {
  const Bytes full = small_writer().to_bytes();
  const auto f = parse(full);
  uint64_t data_end = 0;  // the trailing padding after the last tensor is optional
  for (const GgufTensor& t : f->tensors())
    data_end = std::max(data_end, f->data_offset() + t.offset + t.bytes);
  for (size_t len = 0; len <= full.size(); ++len) {
    const Bytes cut(full.begin(), full.begin() + len);
    if (len >= data_end) {
      EXPECT_NO_THROW(parse(cut)) << len;
      continue;
    }
    const std::string msg = parse_error(cut);
    const bool explained = msg.find("truncated at offset") != std::string::npos ||
                           msg.find("bytes left") != std::string::npos ||
                           msg.find("past the end of the file") != std::string::npos ||
                           msg.find("empty file") != std::string::npos;
    EXPECT_TRUE(explained) << len << ": " << msg;
  }
}

TEST(GgufBadFile, TruncationNamesTheTensorBeingRead) {
  const Bytes full = small_writer().to_bytes();
  const std::string name = "blk.0.attn_q.weight";
  const auto at = std::search(full.begin(), full.end(), name.begin(), name.end()) - full.begin();
  const Bytes cut(full.begin(), full.begin() + at + name.size() + 2);  // inside n_dims
  EXPECT_PARSE_ERROR(cut, "truncated at offset " + std::to_string(at + name.size()) +
                              " while reading tensor info 1 ('blk.0.attn_q.weight')");
}

TEST(GgufBadFile, EmptyAndWrongMagic) {
  EXPECT_PARSE_ERROR(Bytes{}, "empty file");
  EXPECT_PARSE_ERROR((Bytes{'G', 'G'}), "truncated at offset 2 while reading magic");
  Raw r;
  r.header(0, 0);
  Bytes b = r.bytes();
  b[3] = 'L';
  EXPECT_PARSE_ERROR(b, "not a GGUF file (magic 'GGUL', expected 'GGUF')");
  b[0] = 0;
  EXPECT_PARSE_ERROR(b, "magic '\\x00GUL'");
}

TEST(GgufBadFile, UnsupportedVersions) {
  EXPECT_PARSE_ERROR(Raw().header(0, 0, 1).bytes(),
                     "unsupported GGUF version 1; kvbench reads versions 2 and 3");
  EXPECT_PARSE_ERROR(Raw().header(0, 0, 4).bytes(), "unsupported GGUF version 4");
  EXPECT_PARSE_ERROR(Raw().header(0, 0, 0x03000000).bytes(), "(big-endian file?)");
}

TEST(GgufBadFile, HugeCountsFailBeforeAllocating) {
  EXPECT_PARSE_ERROR(Raw().header(k2p60, 0).bytes(),
                     "tensor count 1152921504606846976 is too large for the 0 bytes left");
  EXPECT_PARSE_ERROR(Raw().header(0, k2p60).bytes(),
                     "metadata count 1152921504606846976 is too large");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).u64(k2p60).fill(16).bytes(),
                     "key length 1152921504606846976 at offset 24 exceeds the 16 bytes left while "
                     "reading metadata key 0");
  EXPECT_PARSE_ERROR(
      Raw().header(0, 1).str("s").u32(uint32_t(GgufType::STRING)).u64(k2p60).bytes(),
      "string length 1152921504606846976 at offset 37 exceeds the 0 bytes left while reading "
      "value of metadata key 's'");
  for (GgufType elem : {GgufType::U8, GgufType::STRING, GgufType::ARRAY}) {
    EXPECT_PARSE_ERROR(Raw()
                           .header(0, 1)
                           .str("a")
                           .u32(uint32_t(GgufType::ARRAY))
                           .u32(uint32_t(elem))
                           .u64(k2p60)
                           .fill(64)
                           .bytes(),
                       "array count 1152921504606846976 is too large for the 64 bytes left");
  }
  // Tensor name length and dimension.
  EXPECT_PARSE_ERROR(Raw().header(1, 0).u64(k2p60).fill(40).bytes(),
                     "tensor name length 1152921504606846976");
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {k2p60}, 0, 0).pad(32).fill(64).bytes(),
                     "tensor 'w' needs more bytes than the whole file");
  EXPECT_PARSE_ERROR(
      Raw().header(1, 0).tensor("w", {uint64_t(1) << 40, uint64_t(1) << 40}, 0, 0).bytes(),
      "tensor 'w' element count overflows int64");
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {uint64_t(1) << 63}, 0, 0).bytes(),
                     "tensor 'w' dimension 0 is 9223372036854775808");
}

TEST(GgufBadFile, ArrayElementBudget) {
  // 2^23 + 1 real bytes: the count fits the file but not the reader's budget.
  const uint64_t n = (uint64_t(1) << 23) + 1;
  Raw r;
  r.header(0, 1).str("a").u32(uint32_t(GgufType::ARRAY)).u32(uint32_t(GgufType::U8)).u64(n).fill(n);
  EXPECT_PARSE_ERROR(r.bytes(), "more than 8388608 elements in total");
}

TEST(GgufBadFile, BadDimensions) {
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad(32).fill(32).bytes(),
                     "tensor 'w' has 5 dimensions (must be 1 to 4)");
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {}, 0, 0).pad(32).fill(32).bytes(),
                     "tensor 'w' has 0 dimensions");
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {4, 0}, 0, 0).pad(32).fill(32).bytes(),
                     "tensor 'w' dimension 1 is 0");
}

TEST(GgufBadFile, DuplicateKeysAndTensorNames) {
  EXPECT_PARSE_ERROR(
      Raw().header(0, 2).kv_string("general.name", "a").kv_string("general.name", "b").bytes(),
      "duplicate metadata key 'general.name'");
  EXPECT_PARSE_ERROR(
      Raw().header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad(32).fill(64).bytes(),
      "duplicate tensor name 'w'");
}

TEST(GgufBadFile, UnknownTypeAndPartialBlocks) {
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {4}, 1000, 0).pad(32).fill(32).bytes(),
                     "tensor 'w' has unknown type id 1000");
  EXPECT_PARSE_ERROR(
      Raw().header(1, 0).tensor("w", {33}, uint32_t(GgmlType::Q8_0), 0).pad(32).fill(64).bytes(),
      "tensor 'w' row of 33 elements is not a whole number of blocks of 32");
}

TEST(GgufBadFile, TensorDataPlacement) {
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {4}, 0, 16).pad(32).fill(64).bytes(),
                     "tensor 'w' offset 16 is not a multiple of the alignment 32");
  EXPECT_PARSE_ERROR(
      Raw().header(1, 0).tensor("w", {16}, 0, 0).pad(32).fill(32).bytes(),
      "tensor 'w' data (64 bytes at data offset 0) extends past the end of the file");
  EXPECT_PARSE_ERROR(
      Raw().header(1, 0).tensor("w", {4}, 0, uint64_t(1) << 62).pad(32).fill(32).bytes(),
      "extends past the end of the file");
  EXPECT_PARSE_ERROR(Raw().header(1, 0).tensor("w", {4}, 0, ~uint64_t(31)).pad(32).fill(32).bytes(),
                     "extends past the end of the file");
  EXPECT_PARSE_ERROR(
      Raw().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad(32).fill(64).bytes(),
      "tensors 'a' and 'b' overlap");
  // Reverse file order, same overlap: found after sorting by offset.
  EXPECT_PARSE_ERROR(
      Raw().header(2, 0).tensor("b", {4}, 0, 32).tensor("a", {16}, 0, 0).pad(32).fill(64).bytes(),
      "tensors 'a' and 'b' overlap");
}

TEST(GgufBadFile, BadAlignmentValues) {
  const auto with_alignment = [](Raw kv) {
    return kv.tensor("w", {4}, 0, 0).pad(64).fill(64).bytes();
  };
  EXPECT_PARSE_ERROR(with_alignment(Raw().header(1, 1).kv_u32("general.alignment", 0)),
                     "invalid general.alignment 0 (must be a power of two");
  EXPECT_PARSE_ERROR(with_alignment(Raw().header(1, 1).kv_u32("general.alignment", 3)),
                     "invalid general.alignment 3");
  EXPECT_PARSE_ERROR(with_alignment(Raw()
                                        .header(1, 1)
                                        .str("general.alignment")
                                        .u32(uint32_t(GgufType::U64))
                                        .u64(uint64_t(1) << 40)),
                     "invalid general.alignment 1099511627776");
  EXPECT_PARSE_ERROR(with_alignment(Raw()
                                        .header(1, 1)
                                        .str("general.alignment")
                                        .u32(uint32_t(GgufType::I32))
                                        .u32(uint32_t(-64))),
                     "invalid general.alignment -64");
  EXPECT_PARSE_ERROR(with_alignment(Raw().header(1, 1).kv_string("general.alignment", "32")),
                     "general.alignment has type string, expected u32");
  // A valid non-default alignment moves the data section.
  const Bytes ok = Raw()
                       .header(1, 1)
                       .kv_u32("general.alignment", 64)
                       .tensor("w", {4}, 0, 0)
                       .pad(64)
                       .fill(64)
                       .bytes();
  EXPECT_EQ(parse(ok)->data_offset(), 128u);
}

TEST(GgufBadFile, InvalidValues) {
  EXPECT_PARSE_ERROR(Raw().header(0, 1).str("k").u32(13).u32(0).bytes(),
                     "invalid value type 13 at offset 33 while reading value of metadata key 'k'");
  EXPECT_PARSE_ERROR(
      Raw().header(0, 1).str("k").u32(uint32_t(GgufType::ARRAY)).u32(99).u64(1).u32(0).bytes(),
      "invalid value type 99 at offset 37");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).str("k").u32(uint32_t(GgufType::BOOL)).u8(2).bytes(),
                     "invalid bool value 2");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).str("").u32(uint32_t(GgufType::U8)).u8(0).bytes(),
                     "empty metadata key at offset 24");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).str("a\xff").u32(uint32_t(GgufType::U8)).u8(0).bytes(),
                     "metadata key 'a\\xff' at offset 24 is not valid UTF-8");
}

TEST(GgufBadFile, ArrayNestingIsLimited) {
  const auto nested = [](int depth) {
    Raw r;
    r.header(0, 1).str("k").u32(uint32_t(GgufType::ARRAY));
    for (int d = 1; d < depth; ++d) r.u32(uint32_t(GgufType::ARRAY)).u64(1);
    return r.u32(uint32_t(GgufType::U8)).u64(1).u8(5).bytes();
  };
  const Bytes two = nested(2);
  EXPECT_EQ(parse(two)->find("k")->to_display(), "[1 item: [1 item: 5]]");
  EXPECT_PARSE_ERROR(nested(3), "arrays nested deeper than 2 levels");
  EXPECT_PARSE_ERROR(nested(1000), "arrays nested deeper than 2 levels");
}

TEST(GgufBadFile, MessagesEscapeFileText) {
  const std::string key = "evil\nkey\x1b[31m";
  const std::string msg = parse_error(Raw().header(0, 2).kv_u32(key, 1).kv_u32(key, 2).bytes());
  EXPECT_NE(msg.find("duplicate metadata key 'evil\\nkey\\x1b[31m'"), std::string::npos) << msg;
  const std::string long_name(500, 'n');
  const std::string msg2 = parse_error(Raw().header(1, 0).tensor(long_name, {4}, 1000, 0).bytes());
  EXPECT_LT(msg2.size(), 200u) << msg2;
}

// --- opening files ---------------------------------------------------------------

TEST(GgufOpen, ErrorsNameThePath) {
  const std::string dir = temp_dir();
  const std::string missing = dir + "/missing.gguf";
  EXPECT_EQ(error_of([&] { GgufFile::open(missing); }),
            missing + ": cannot open (No such file or directory)");
  EXPECT_EQ(error_of([&] { GgufFile::open(dir); }), dir + ": not a regular file");
  const std::string empty = dir + "/empty.gguf";
  std::ofstream(empty).close();
  EXPECT_EQ(error_of([&] { GgufFile::open(empty); }), empty + ": empty file (not a GGUF file)");
  const std::string cut = dir + "/cut.gguf";
  const Bytes full = small_writer().to_bytes();
  std::ofstream(cut, std::ios::binary).write(reinterpret_cast<const char*>(full.data()), 30);
  EXPECT_NE(error_of([&] { GgufFile::open(cut); }).rfind(cut + ": ", 0), std::string::npos);
  std::filesystem::remove_all(dir);
}

#ifdef KVBENCH_TEST_DATA
// The committed fuzz seeds: valid_* must parse, broken_* must be rejected.
TEST(GgufCorpus, SeedsBehaveAsNamed) {
  const std::filesystem::path dir =
      std::filesystem::path(KVBENCH_TEST_DATA) / ".." / "fuzz" / "corpus" / "gguf";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    if (name.rfind("valid_", 0) == 0) {
      EXPECT_NO_THROW(GgufFile::open(entry.path().string()));
      ++seen;
    } else if (name.rfind("broken_", 0) == 0) {
      EXPECT_THROW(GgufFile::open(entry.path().string()), InputError);
      ++seen;
    }
  }
  EXPECT_GE(seen, 4);
}
#endif

}  // namespace
}  // namespace kvbench
