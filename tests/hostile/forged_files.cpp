#include "tests/hostile/forged_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/iostreams/device/back_inserter.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "harness/sha256.h"
#include "harness/snapshot/snapshot_file.h"
#include "model/gguf/gguf_writer.h"
#include "model/testing/tiny_model.h"

namespace kvbench::test {

namespace io = boost::iostreams;

// --- GGUF

GgufValue& ForgedModel::key(const std::string& key) {
  for (auto& [k, v] : keys)
    if (k == key) return v;
  keys.emplace_back(key, GgufValue{});
  return keys.back().second;
}

void ForgedModel::drop_key(const std::string& key) {
  std::erase_if(keys, [&](const auto& kv) { return kv.first == key; });
}

ForgedTensor* ForgedModel::tensor(const std::string& name) {
  for (ForgedTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void ForgedModel::drop_tensors(const std::function<bool(const std::string& name)>& pred) {
  std::erase_if(tensors, [&](const ForgedTensor& t) { return pred(t.name); });
}

void ForgedModel::copy_layer(int from, int to) {
  const std::string src = "blk." + std::to_string(from) + ".";
  const std::string dst = "blk." + std::to_string(to) + ".";
  std::vector<ForgedTensor> copies;
  for (const ForgedTensor& t : tensors)
    if (t.name.rfind(src, 0) == 0) {
      ForgedTensor c = t;
      c.name = dst + t.name.substr(src.size());
      copies.push_back(std::move(c));
    }
  tensors.insert(tensors.end(), copies.begin(), copies.end());
}

void ForgedModel::write(const std::string& path) const {
  GgufWriter w;
  for (const auto& [k, v] : keys) w.set(k, v);
  for (const ForgedTensor& t : tensors)
    w.add_tensor(t.name, t.type, t.ne, t.data.data(), t.data.size());
  w.write(path);
}

ForgedModel tiny_model(bool gemma3) {
  TinyModelOptions o;
  o.arch = gemma3 ? TinyArch::Gemma3 : TinyArch::Llama;
  if (gemma3) o.vocab = TinyVocabKind::Spm;
  const std::vector<uint8_t> bytes = make_tiny_model(o);
  const auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "tiny");
  ForgedModel m;
  m.keys = f->metadata();
  for (const GgufTensor& t : f->tensors())
    m.tensors.push_back({t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                         std::vector<uint8_t>(t.data, t.data + t.bytes)});
  return m;
}

namespace {
GgufValue scalar(GgufType type, decltype(GgufValue::data) data) {
  GgufValue v;
  v.type = type;
  v.data = std::move(data);
  return v;
}
}  // namespace

GgufValue gguf_u32(uint64_t v) { return scalar(GgufType::U32, v); }
GgufValue gguf_i32(int64_t v) { return scalar(GgufType::I32, v); }
GgufValue gguf_f32(double v) { return scalar(GgufType::F32, v); }
GgufValue gguf_f64(double v) { return scalar(GgufType::F64, v); }
GgufValue gguf_bool(bool v) { return scalar(GgufType::BOOL, v); }
GgufValue gguf_string(std::string v) { return scalar(GgufType::STRING, std::move(v)); }
GgufValue gguf_array(GgufType elem, std::vector<GgufValue> items) {
  GgufValue v = scalar(GgufType::ARRAY, std::move(items));
  v.elem_type = elem;
  return v;
}

// --- snapshots

namespace {

size_t find_tag(const std::string& raw, const char* tag, size_t from = 0) {
  const size_t at = raw.find(tag, from);
  EXPECT_NE(at, std::string::npos) << "no " << tag << " section in the payload";
  return at;
}

constexpr size_t kTrailer = 4 + 32 + 8;  // header size, header sha256, end marker

}  // namespace

size_t first_position_offset(const std::string& raw) {
  const size_t rows = find_tag(raw, "ROWS", find_tag(raw, "STOR"));
  return rows + 4 + 1 + 4 + 4 + 8;
}

size_t evicted_mark_offset(const std::string& raw) { return find_tag(raw, "STOR") + 4 + 8 + 8 + 8; }

void put_i32(std::string& raw, size_t at, int32_t v) {
  ASSERT_LE(at + 4, raw.size());
  std::memcpy(raw.data() + at, &v, 4);
}

namespace {

// A snapshot split at its header: the bytes before it, the header, and the
// header's offset.
struct SnapshotParts {
  std::string file;
  size_t header_at = 0;
  nlohmann::ordered_json header;
};

SnapshotParts read_snapshot(const std::string& kvc) {
  std::ifstream in(kvc, std::ios::binary);
  SnapshotParts p;
  p.file.assign(std::istreambuf_iterator<char>(in), {});
  EXPECT_GT(p.file.size(), 16 + kTrailer);
  uint32_t h = 0;
  std::memcpy(&h, p.file.data() + p.file.size() - kTrailer, 4);  // little-endian, like the format
  p.header_at = p.file.size() - kTrailer - h;
  p.header = nlohmann::ordered_json::parse(p.file.substr(p.header_at, h));
  return p;
}

// Writes `body` (magic and payload) and the header `text`, sealed: its size
// and sha256 recomputed, the end marker kept.
void seal(const std::string& kvc, const SnapshotParts& p, const std::string& body,
          const std::string& text) {
  std::string forged = body + text;
  const uint32_t n = static_cast<uint32_t>(text.size());
  forged.append(reinterpret_cast<const char*>(&n), 4);
  const std::string hex = sha256_hex(text.data(), text.size());
  for (size_t i = 0; i < 32; ++i)
    forged += static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  forged += p.file.substr(p.file.size() - 8);
  std::ofstream(kvc, std::ios::binary | std::ios::trunc) << forged;
}

}  // namespace

void forge_header(const std::string& kvc,
                  const std::function<std::string(nlohmann::ordered_json&)>& edit) {
  SnapshotParts p = read_snapshot(kvc);
  const std::string text = edit(p.header);
  seal(kvc, p, p.file.substr(0, p.header_at), text);
}

void forge_payload(const std::string& kvc, const std::function<void(std::string& raw)>& edit) {
  SnapshotParts p = read_snapshot(kvc);
  ASSERT_EQ(p.header["payload"]["compression"], "zstd");
  const std::string payload = p.file.substr(16, p.header_at - 16);

  std::vector<char> raw_bytes;
  decompress_payload({reinterpret_cast<const uint8_t*>(payload.data()), payload.size()},
                     SnapshotCompression::Zstd, uint64_t{1} << 30, raw_bytes);
  std::string raw(raw_bytes.begin(), raw_bytes.end());
  const size_t size = raw.size();
  edit(raw);
  ASSERT_EQ(raw.size(), size);

  std::string packed;
  {
    io::filtering_ostream out;
    out.push(io::zstd_compressor());
    out.push(io::back_inserter(packed));
    out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
  }  // closing the chain writes the last frame
  p.header["payload"]["bytes"] = packed.size();
  p.header["payload"]["sha256"] = sha256_hex(packed.data(), packed.size());
  seal(kvc, p, p.file.substr(0, 16) + packed, p.header.dump(1));
}

}  // namespace kvbench::test
