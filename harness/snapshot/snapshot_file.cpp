#include "harness/snapshot/snapshot_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/iostreams/device/array.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <thread>

#include "datasets/json_text.h"
#include "harness/sha256.h"
#include "model/common/atomic_file.h"
#include "model/common/input_file.h"

namespace io = boost::iostreams;
using nlohmann::json;
using nlohmann::ordered_json;

namespace kvbench {
namespace {

constexpr char kMagic[8] = {'K', 'V', 'B', 'C', 'A', 'C', 'H', 'E'};
constexpr char kEndMagic[8] = {'K', 'V', 'B', 'C', '-', 'E', 'N', 'D'};
constexpr size_t kPrefix = 16;           // magic, version, reserved
constexpr size_t kTrailer = 4 + 32 + 8;  // header size, header sha256, end marker
constexpr uint64_t kMaxHeader = 1 << 20;
// Bounds on what a header may claim the payload decompresses to.
constexpr uint64_t kMaxCompressionRatio = 1000;
constexpr uint64_t kMinRawLimit = uint64_t{256} << 20;
constexpr int kBuffer = 1 << 20;  // compressor and device buffers
constexpr uint8_t kZstdMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
constexpr uint8_t kGzipMagic[2] = {0x1f, 0x8b};

// --- the document section ---

void write_document(StateWriter& out, const SnapshotDocument& d) {
  out.tag(state_tag("DOCS"));
  out.array(d.tokens);
  out.i64(d.context_begin);
  out.i32(d.chunk);
  out.str(d.activations);
  out.array(d.logits);
  out.tag(state_tag("DEND"));
}

// The activations field's values (activations_name, snapshot_model.h).
bool known_activations(const std::string& name) {
  return name == "f32" || name == "q8" || name == "q8+bf16-attn" || name == "q8+i8q" ||
         name == "q8+bf16-attn+i8q";
}

SnapshotDocument read_document(StateReader& in) {
  in.set_context("document");
  in.expect_tag(state_tag("DOCS"), "document");
  SnapshotDocument d;
  in.array_upto(d.tokens, std::numeric_limits<int32_t>::max(), "token ids");
  for (int32_t t : d.tokens)
    if (t < 0) in.fail("negative token id " + std::to_string(t));
  d.context_begin = in.count("context start", 0, static_cast<int64_t>(d.tokens.size()));
  d.chunk = in.i32("chunk");
  if (d.chunk < 1) in.fail("chunk " + std::to_string(d.chunk));
  d.activations = in.str("activations", 16);
  if (!known_activations(d.activations)) in.fail("activation precision '" + d.activations + "'");
  in.array_upto(d.logits, 1 << 24, "logits");
  in.expect_tag(state_tag("DEND"), "end of document");
  return d;
}

// --- header fields ---

// "/model/n_layers" -> "model.n_layers"
std::string field_name(const std::string& pointer) {
  std::string s = pointer.substr(1);
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

std::string show(const json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 16 ? s.substr(0, 12) + "..." : s;
}

// Every leaf of `want` must be in `have` with the same value; the fields
// that differ, "name (snapshot X, this run Y)", are appended to `diffs`.
void diff_fields(const json& have, const json& want, std::vector<std::string>& diffs,
                 std::set<std::string>& known) {
  const json flat = want.flatten();
  for (const auto& [pointer, value] : flat.items()) {
    known.insert(pointer);
    const json::json_pointer p(pointer);
    if (!have.contains(p)) {
      diffs.push_back(field_name(pointer) + " (missing)");
      continue;
    }
    const json& h = have.at(p);
    if (h != value)
      diffs.push_back(field_name(pointer) + " (snapshot " + show(h) + ", " + "expected " +
                      show(value) + ")");
  }
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

// A payload field of the header: an unsigned number or a string.
template <typename T>
T field(const json& header, const char* pointer, const std::string& name) {
  static_assert(std::is_same_v<T, uint64_t> || std::is_same_v<T, std::string>);
  const json::json_pointer p(pointer);
  if (!header.contains(p)) throw SnapshotError(name + ": " + field_name(pointer) + ": missing");
  const json& v = header.at(p);
  if (std::is_same_v<T, uint64_t> ? !v.is_number_unsigned() : !v.is_string())
    throw SnapshotError(name + ": " + field_name(pointer) + ": wrong type (" + v.dump() + ")");
  return v.get<T>();
}

ordered_json identity_json(const ModelIdentity& m) {
  ordered_json model = {{"sha256", m.sha256}, {"bytes", m.file_bytes}};
  for (const auto& [k, v] : m.hparams.items()) model[k] = v;
  return {{"model", model}, {"tokenizer", {{"fingerprint", m.tokenizer}}}};
}

// The fields this run must match, before the payload is read.
ordered_json external_fields(const SnapshotExpect& e) {
  ordered_json j = {{"format", "kvbench-cache-snapshot"},
                    {"format_version", kSnapshotFormatVersion},
                    {"kvbench_version", KVBENCH_VERSION}};
  j.update(identity_json(e.model));
  j["precision"] = {{"activations", e.activations}};
  return j;
}

// --- the container ---

struct Container {
  ordered_json header;
  std::span<const uint8_t> payload;
};

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

Container open_container(std::span<const uint8_t> f, const std::string& name) {
  if (f.size() >= 8 && std::memcmp(f.data(), kMagic, 8) != 0)
    throw SnapshotError(name + ": not a kvbench cache snapshot (bad magic)");
  if (f.size() < kPrefix + kTrailer)
    throw SnapshotError(name + ": truncated: " + std::to_string(f.size()) +
                        " bytes, a snapshot has at least " + std::to_string(kPrefix + kTrailer));
  const uint32_t version = read_u32(f.data() + 8);
  if (version != kSnapshotFormatVersion)
    throw SnapshotError(name + ": format_version: the file is format " + std::to_string(version) +
                        ", this kvbench reads format " + std::to_string(kSnapshotFormatVersion));
  if (read_u32(f.data() + 12) != 0)
    throw SnapshotError(name + ": corrupt: reserved bytes are not zero");
  const uint8_t* end = f.data() + f.size();
  if (std::memcmp(end - 8, kEndMagic, 8) != 0)
    throw SnapshotError(name + ": truncated or corrupt: the end marker is missing");
  const uint64_t h = read_u32(end - kTrailer);
  if (h > kMaxHeader || h > f.size() - kPrefix - kTrailer)
    throw SnapshotError(name + ": corrupt: header size " + std::to_string(h));
  const uint8_t* header = end - kTrailer - h;
  const std::string digest = sha256_hex(header, h);
  static const char* hexd = "0123456789abcdef";
  std::string stored;
  for (int i = 0; i < 32; ++i) {
    const uint8_t b = (end - kTrailer + 4)[i];
    stored += hexd[b >> 4];
    stored += hexd[b & 15];
  }
  if (digest != stored) throw SnapshotError(name + ": header checksum mismatch (corrupted file)");
  Container c;
  try {
    check_json_depth(std::string_view(reinterpret_cast<const char*>(header), h), "depth");
  } catch (const InputError&) {
    throw SnapshotError(name + ": header: nested deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels");
  }
  try {
    c.header = ordered_json::parse(header, header + h);
  } catch (const json::exception& e) {
    throw SnapshotError(name + ": header: invalid JSON (" + e.what() + ")");
  }
  if (!c.header.is_object()) throw SnapshotError(name + ": header: not a JSON object");
  c.payload = f.subspan(kPrefix, f.size() - kPrefix - kTrailer - h);
  return c;
}

// A read-only mapping of a whole file.
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    struct stat st {};
    // Regular files only, refused before a FIFO could block the open.
    fd_ = open_regular_file(path, &st);
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) {
        ::close(fd_);
        throw InputError(path + ": cannot map (" + std::strerror(errno) + ")");
      }
      data_ = static_cast<const uint8_t*>(p);
      ::madvise(p, size_, MADV_SEQUENTIAL);
    }
  }
  ~Mapping() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    ::close(fd_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A Boost.Iostreams sink writing to a file descriptor while hashing and
// counting what passes (the compressed payload).
class HashingFdSink {
 public:
  using char_type = char;
  using category = io::sink_tag;
  HashingFdSink(int fd, Sha256* hash, uint64_t* count, const std::string* path)
      : fd_(fd), hash_(hash), count_(count), path_(path) {}
  std::streamsize write(const char* s, std::streamsize n) {
    write_all(s, static_cast<size_t>(n));
    hash_->update(s, static_cast<size_t>(n));
    *count_ += static_cast<uint64_t>(n);
    return n;
  }
  void write_all(const char* s, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, s, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw InputError(*path_ + ": write failed (" + std::strerror(errno) + ")");
      s += w;
      n -= static_cast<size_t>(w);
    }
  }

 private:
  int fd_;
  Sha256* hash_;
  uint64_t* count_;
  const std::string* path_;
};

void push_decompressor(io::filtering_istream& in, SnapshotCompression c) {
  if (c == SnapshotCompression::Zstd)
    in.push(io::zstd_decompressor(kBuffer), kBuffer);
  else
    in.push(io::gzip_decompressor(io::gzip::default_window_bits, kBuffer), kBuffer);
}

}  // namespace

std::string_view compression_name(SnapshotCompression c) {
  return c == SnapshotCompression::Zstd ? "zstd" : "gzip";
}

SnapshotCompression parse_compression(std::string_view name) {
  if (name == "zstd") return SnapshotCompression::Zstd;
  if (name == "gzip") return SnapshotCompression::Gzip;
  throw InputError("compression '" + std::string(name) + "' (valid: zstd, gzip)");
}

void write_snapshot_payload(StateWriter& out, const PolicyCache& cache,
                            const SnapshotDocument& doc) {
  write_document(out, doc);
  cache.save_state(out);
}

SnapshotPayload read_snapshot_payload(StateReader& in) {
  SnapshotPayload p;
  p.doc = read_document(in);
  p.cache = PolicyCache::load_state(in);
  // The cache holds the document at positions 0..n-1 (a policy that renumbers
  // them makes them smaller), so every sequence continues at n at most: a
  // larger position would put the question where the document does not end.
  in.set_context("document");
  const int64_t n = static_cast<int64_t>(p.doc.tokens.size());
  const uint64_t known = p.cache->store().known_sequences();
  for (int s = 0; s < CacheStore::kMaxSeqs; ++s)
    if (known >> s & 1)
      if (const int32_t next = p.cache->next_position(s); next > n)
        in.fail("sequence " + std::to_string(s) + " continues at position " + std::to_string(next) +
                ", beyond the document's " + std::to_string(n) + " tokens");
  return p;
}

ordered_json describe_payload(const SnapshotDocument& doc, const PolicyCache& cache) {
  const CacheContext& c = cache.context();
  const MemoryReport m = cache.memory();
  auto tier = [](const MemoryBytes& b) {
    return ordered_json{
        {"kv", b.kv}, {"scales", b.scales}, {"meta", b.meta}, {"entries", b.entries}};
  };
  return {{"document",
           {{"tokens", doc.tokens.size()},
            {"tokens_sha256", sha256_hex(doc.tokens.data(), doc.tokens.size() * sizeof(int32_t))},
            {"context_begin", doc.context_begin},
            {"chunk", doc.chunk},
            {"logits", doc.logits.size()}}},
          {"precision", {{"kv", cache.spec().storage.name}, {"activations", doc.activations}}},
          {"policy",
           {{"spec", to_string(cache.spec())},
            {"context_tokens", c.context_tokens},
            {"seed", c.seed},
            {"collect_attention", c.collect_attention},
            {"keep_queries", c.keep_queries}}},
          {"memory",
           {{"hot", tier(m.hot)},
            {"cold", tier(m.cold)},
            {"policy_state", m.policy_state},
            {"total", m.total()}}}};
}

void decompress_payload(std::span<const uint8_t> bytes, SnapshotCompression c, uint64_t max_bytes,
                        std::vector<char>& out) {
  io::filtering_istream in;
  push_decompressor(in, c);
  in.push(io::array_source(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  in.exceptions(std::ios::badbit);
  out.clear();
  std::vector<char> buf(1 << 16);
  try {
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const auto n = static_cast<size_t>(in.gcount());
      if (out.size() + n > max_bytes)
        throw SnapshotError("payload: more than " + std::to_string(max_bytes) + " bytes");
      out.insert(out.end(), buf.data(), buf.data() + n);
    }
  } catch (const std::ios_base::failure& e) {
    throw SnapshotError(std::string("payload: cannot decompress (") +
                        std::string(compression_name(c)) + "): " + e.what());
  }
}

// --- saving ---

void save_cache_snapshot(const std::string& path, const PolicyCache& cache,
                         const SnapshotDocument& doc, const ModelIdentity& model,
                         const SnapshotOptions& options) {
  if (cache.store().in_step()) throw InputError(path + ": a cache cannot be saved inside a step");
  const int max_level = options.compression == SnapshotCompression::Zstd ? 19 : 9;
  if (options.level < 1 || options.level > max_level)
    throw InputError(path + ": compression level " + std::to_string(options.level) +
                     " (valid: 1.." + std::to_string(max_level) + " for " +
                     std::string(compression_name(options.compression)) + ")");
  AtomicFile file(path);  // removed unless committed below
  const int fd = file.fd();
  {
    Sha256 payload_hash, unused;
    uint64_t payload_bytes = 0, unused_count = 0;
    HashingFdSink plain(fd, &unused, &unused_count, &path);  // prefix and trailer: not payload
    uint8_t prefix[kPrefix] = {};
    std::memcpy(prefix, kMagic, 8);
    std::memcpy(prefix + 8, &kSnapshotFormatVersion, 4);
    plain.write_all(reinterpret_cast<const char*>(prefix), kPrefix);

    uint64_t raw_bytes = 0;
    {
      io::filtering_ostream out;
      if (options.compression == SnapshotCompression::Zstd)
        out.push(
            io::zstd_compressor(io::zstd_params(static_cast<uint32_t>(options.level)), kBuffer),
            kBuffer);
      else
        out.push(io::gzip_compressor(io::gzip_params(options.level), kBuffer), kBuffer);
      out.push(HashingFdSink(fd, &payload_hash, &payload_bytes, &path), kBuffer);
      out.exceptions(std::ios::badbit | std::ios::failbit);
      StateWriter w(out);
      write_snapshot_payload(w, cache, doc);
      raw_bytes = w.written();
      out.reset();  // closes the chain: the compressor writes its last frame
    }

    ordered_json header = external_fields({model, doc.activations});
    ordered_json described = describe_payload(doc, cache);
    header["document"] = described["document"];
    header["precision"] = described["precision"];
    header["policy"] = described["policy"];
    header["memory"] = described["memory"];
    header["payload"] = {{"compression", compression_name(options.compression)},
                         {"bytes", payload_bytes},
                         {"raw_bytes", raw_bytes},
                         {"sha256", payload_hash.hex()}};
    const std::string text = header.dump(1);
    Sha256 header_hash;
    header_hash.update(text.data(), text.size());
    const std::string hex = header_hash.hex();
    std::string trailer(kTrailer, '\0');
    const uint32_t h = static_cast<uint32_t>(text.size());
    std::memcpy(trailer.data(), &h, 4);
    for (int i = 0; i < 32; ++i)
      trailer[4 + i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    std::memcpy(trailer.data() + 36, kEndMagic, 8);
    plain.write_all(text.data(), text.size());
    plain.write_all(trailer.data(), trailer.size());
  }
  file.commit();
}

// --- loading ---

SnapshotInfo read_snapshot_info(const std::string& path) {
  Mapping map(path);
  SnapshotInfo info;
  info.header = open_container(map.bytes(), path).header;
  info.file_bytes = map.bytes().size();
  return info;
}

SnapshotDocument load_cache_snapshot(const std::string& path, const SnapshotExpect& expect,
                                     std::unique_ptr<PolicyCache>& cache) {
  Mapping map(path);
  return load_cache_snapshot_bytes(map.bytes(), path, expect, cache);
}

SnapshotDocument load_cache_snapshot_bytes(std::span<const uint8_t> file, const std::string& name,
                                           const SnapshotExpect& expect,
                                           std::unique_ptr<PolicyCache>& cache) {
  const Container c = open_container(file, name);
  const ordered_json& header = c.header;
  // Header fields are compared as plain JSON (ordered_json and json differ in type only).
  const json have = json::parse(header.dump());

  // 1. What this run must match, all differences at once.
  std::vector<std::string> diffs;
  std::set<std::string> known;
  diff_fields(have, json::parse(external_fields(expect).dump()), diffs, known);
  if (!diffs.empty())
    throw SnapshotError(name + ": does not match this model / run: " + join(diffs));

  // 2. The payload: recorded size, compression, checksum.
  for (const char* p :
       {"/payload/compression", "/payload/bytes", "/payload/raw_bytes", "/payload/sha256"})
    known.insert(p);
  const auto bytes = field<uint64_t>(have, "/payload/bytes", name);
  if (bytes != c.payload.size())
    throw SnapshotError(name + ": payload.bytes: the header says " + std::to_string(bytes) +
                        ", the file holds " + std::to_string(c.payload.size()) +
                        " (truncated or corrupt)");
  const std::string comp_name = field<std::string>(have, "/payload/compression", name);
  SnapshotCompression comp;
  try {
    comp = parse_compression(comp_name);
  } catch (const InputError& e) {
    throw SnapshotError(name + ": payload.compression: " + e.what());
  }
  const bool is_zstd = c.payload.size() >= 4 && std::memcmp(c.payload.data(), kZstdMagic, 4) == 0;
  const bool is_gzip = c.payload.size() >= 2 && std::memcmp(c.payload.data(), kGzipMagic, 2) == 0;
  if ((comp == SnapshotCompression::Zstd && !is_zstd) ||
      (comp == SnapshotCompression::Gzip && !is_gzip))
    throw SnapshotError(name + ": payload.compression: the header says " + comp_name +
                        ", the payload is " +
                        (is_zstd   ? "zstd"
                         : is_gzip ? "gzip"
                                   : "neither zstd nor gzip"));
  const std::string sha = field<std::string>(have, "/payload/sha256", name);
  const auto raw_bytes = field<uint64_t>(have, "/payload/raw_bytes", name);
  // The parser sizes what it allocates by the bytes left of raw_bytes: a
  // forged header (its checksum is no secret) must not claim gigabytes
  // behind a few compressed bytes. Real payloads (K/V rows, statistics)
  // compress far less than kMaxCompressionRatio.
  if (raw_bytes > std::max<uint64_t>(kMinRawLimit, c.payload.size() * kMaxCompressionRatio))
    throw SnapshotError(name + ": payload.raw_bytes: the header says " + std::to_string(raw_bytes) +
                        " bytes behind " + std::to_string(c.payload.size()) +
                        " compressed ones, more than a snapshot compresses (corrupt or forged)");

  // 3. Checksum, decompress and parse into a new cache. The sha256 runs on a
  // second thread while the payload is decompressed and parsed (the parser
  // is safe on any bytes: it is fuzzed); nothing read is used before both
  // are done, and a checksum failure takes precedence over what the parser
  // said. On two cores this takes a quarter off an 8k-token load.
  std::string digest;
  std::thread hasher([&] { digest = sha256_hex(c.payload.data(), c.payload.size()); });
  struct Joiner {
    std::thread& t;
    ~Joiner() {
      if (t.joinable()) t.join();
    }
  } joiner{hasher};
  auto check_sum = [&] {
    if (hasher.joinable()) hasher.join();
    if (digest != sha)
      throw SnapshotError(name + ": payload.sha256 does not match the payload (corrupted file)");
  };
  io::filtering_istream in;
  push_decompressor(in, comp);
  in.push(io::array_source(reinterpret_cast<const char*>(c.payload.data()), c.payload.size()));
  in.exceptions(std::ios::badbit);
  StateReader reader(in, raw_bytes, "payload");
  SnapshotPayload payload;
  auto actual_size = [&] {
    // Everything the stream holds (only after a failure: how long it really is).
    uint64_t n = reader.consumed();
    char buf[1 << 14];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) n += static_cast<uint64_t>(in.gcount());
    return n;
  };
  try {
    payload = read_snapshot_payload(reader);
    if (reader.consumed() != raw_bytes || in.peek() != std::char_traits<char>::eof()) {
      const uint64_t n = actual_size();
      throw SnapshotError("payload.raw_bytes: the header says " + std::to_string(raw_bytes) +
                          ", the payload holds " + std::to_string(n));
    }
  } catch (const SnapshotError& e) {
    check_sum();
    std::string what = e.what();
    if (what.rfind("payload.raw_bytes", 0) != 0 && reader.remaining() == 0) {
      // Ran into the recorded size: was the record wrong?
      try {
        const uint64_t n = actual_size();
        if (n != raw_bytes)
          what = "payload.raw_bytes: the header says " + std::to_string(raw_bytes) +
                 ", the payload holds " + std::to_string(n);
      } catch (const std::ios_base::failure&) {
      }
    }
    throw SnapshotError(name + ": " + what);
  } catch (const std::ios_base::failure& e) {
    check_sum();
    throw SnapshotError(name + ": payload: cannot decompress (" + comp_name + "): " + e.what());
  }
  check_sum();

  // 4. What the header says about the payload must be what was read.
  diff_fields(have, json::parse(describe_payload(payload.doc, *payload.cache).dump()), diffs,
              known);
  if (!diffs.empty())
    throw SnapshotError(name + ": the header does not match the payload: " + join(diffs));
  const int64_t n_vocab = expect.model.hparams.value("n_vocab", int64_t{0});
  if (!payload.doc.logits.empty() && static_cast<int64_t>(payload.doc.logits.size()) != n_vocab)
    throw SnapshotError(name + ": document.logits: " + std::to_string(payload.doc.logits.size()) +
                        " logits for a vocabulary of " + std::to_string(n_vocab));
  for (int32_t t : payload.doc.tokens)
    if (n_vocab > 0 && t >= n_vocab)
      throw SnapshotError(name + ": document: token id " + std::to_string(t) +
                          " beyond the vocabulary");
  const json all = have.flatten();  // (a named object: items() of a temporary would dangle)
  for (const auto& [pointer, value] : all.items())
    if (!known.count(pointer))
      throw SnapshotError(name + ": header: unknown field " + field_name(pointer));

  cache = std::move(payload.cache);
  return std::move(payload.doc);
}

}  // namespace kvbench
