// libFuzzer target for the cache snapshot reader. The first input byte picks
// what the rest is:
//   0  a whole .kvc file            -> load_cache_snapshot_bytes
//   1  an uncompressed payload      -> read_snapshot_payload (the state parser)
//   2  a zstd stream, 3  a gzip one -> decompress_payload (capped)
//   4  a header JSON                -> sealed with a valid digest around a
//                                      valid payload, then loaded
// Checksums stop random bytes at the container, so modes 1 and 4 reach the
// parsers behind it. Any input must be refused with SnapshotError (or, for
// the cache's own operations afterwards, InputError) or be accepted; an
// accepted payload must be written back byte for byte, and the loaded cache
// must survive a step with maintenance, sequence operations, a checkpoint
// and rollback, and a clone, under ASan + UBSan.
//
// KVBENCH_SNAPSHOT_SEEDS=DIR fuzz_snapshot  writes the seed corpus and exits.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "harness/sha256.h"
#include "harness/snapshot/snapshot_file.h"
#include "policies/cache_errors.h"
#include "policies/policy_cache.h"

namespace {

using namespace kvbench;

// The identity every seed is written for and every input is checked against.
ModelIdentity fuzz_identity() {
  ModelIdentity id;
  id.sha256 = std::string(64, 'a');
  id.file_bytes = 1234;
  id.hparams = {
      {"n_layers", 2}, {"n_kv_heads", 1}, {"n_heads", 2}, {"head_dim", 8}, {"n_vocab", 16}};
  id.tokenizer = "0123456789abcdef";
  return id;
}

// windows: Gemma 3's form (layer 1 local with a window of 4 and its own
// RoPE base, NEOX pairs).
CacheContext fuzz_context(int64_t tokens, bool windows = false) {
  CacheContext c;
  c.shape = {2, 1, 2, 8};
  c.rope.n_dims = 8;
  c.context_tokens = tokens;
  if (windows) {
    c.rope.neox = true;
    c.rope.freq_base = 1e6f;
    c.rope_local = c.rope;
    c.rope_local.freq_base = 1e4f;
    c.layer_window = {0, 4};
  }
  return c;
}

// One step of n tokens for `seq` with pseudo-random K/V and queries, uniform
// attention where the policy observes it: the whole cache protocol.
void step(PolicyCache& c, int seq, int n, bool decode, uint32_t seed) {
  const KvShape& sh = c.shape();
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), c.next_position(seq));
  StepInfo info;
  info.seq = seq;
  info.phase = decode ? StepPhase::Decode : StepPhase::Prefill;
  info.positions = pos;
  c.begin_step(info);
  std::vector<float> k(static_cast<size_t>(n) * sh.n_kv_heads * sh.head_dim), v(k.size()),
      q(static_cast<size_t>(n) * sh.n_q_heads * sh.head_dim);
  uint32_t s = seed;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(s >> 8) % 2000) / 1000.0f - 1.0f;
  };
  const int group = sh.n_q_heads / sh.n_kv_heads;
  std::vector<float> scratch, probs;
  for (int l = 0; l < sh.n_layers; ++l) {
    for (auto& x : k) x = next();
    for (auto& x : v) x = next();
    for (auto& x : q) x = next();
    c.append(l, k.data(), v.data());
    const AttentionRequest req = c.attention_request(l);
    if (req.queries) c.observe_queries(l, q.data(), pos);
    for (int h = 0; h < sh.n_kv_heads; ++h) {
      const KvHeadView& view = c.view(l, h);
      const int32_t m = view.size();
      scratch.resize(static_cast<size_t>(m) * sh.head_dim);
      volatile float sink = 0;
      if (m > 0) {
        sink = sink + view.keys(0, m, scratch.data())[0];
        sink = sink + view.values(0, m, scratch.data())[0];
        sink = sink + static_cast<float>(view.positions()[m - 1]);
      }
      if (req.wanted && m > 0) {
        probs.assign(static_cast<size_t>(group) * m, 1.0f / static_cast<float>(m));
        for (int t = 0; t < n; ++t) {
          AttentionRows rows;
          rows.layer = l;
          rows.kv_head = h;
          rows.query_index = t;
          rows.query_pos = pos[t];
          rows.group = group;
          rows.n = m;
          rows.probs = probs.data();
          rows.head_stride = m;
          c.observe(rows);
        }
      }
    }
  }
  c.end_step();
}

std::string payload_bytes(const PolicyCache& c, const SnapshotDocument& d) {
  std::ostringstream out;
  StateWriter w(out);
  write_snapshot_payload(w, c, d);
  return out.str();
}

std::string state_of(const PolicyCache& c) {
  std::ostringstream out;
  StateWriter w(out);
  c.save_state(w);
  return out.str();
}

// What an accepted cache must survive: a question on a new sequence sharing
// the document, rolled back to exactly the loaded state; then steps on the
// document itself, a clone, and removing everything.
void exercise(PolicyCache& c) {
  const KvShape& sh = c.shape();
  (void)c.memory();
  for (int l = 0; l < sh.n_layers; ++l)
    for (int h = 0; h < sh.n_kv_heads; ++h) (void)c.held_sources(l, h);
  // Steps only for shapes a step can afford.
  if (static_cast<int64_t>(sh.n_layers) * sh.n_q_heads * sh.head_dim > (1 << 14)) return;
  const uint64_t known = c.store().known_sequences();
  const int seq = known ? __builtin_ctzll(known) : 0;
  const int fresh = ~known ? __builtin_ctzll(~known) : -1;
  try {
    if (c.next_position(seq) > (1 << 30)) return;
    if (known && fresh >= 0 && !c.contiguous_positions()) {
      const std::string before = state_of(c);
      const auto cp = c.checkpoint();
      c.seq_cp(seq, fresh, -1, -1);
      step(c, fresh, 3, false, 1);
      c.end_prefill();
      step(c, fresh, 1, true, 2);
      c.rollback(cp);
      if (state_of(c) != before)
        std::abort();  // the rollback must restore the loaded state exactly
    }
    step(c, seq, 3, false, 3);
    c.end_prefill();
    step(c, seq, 1, true, 4);
    (void)c.clone();
    c.seq_rm(-1, -1, -1);
  } catch (const InputError&) {
  }
}

std::vector<uint8_t> compressed_payload_seed;  // mode 4's payload, made at start-up
std::string seed_header;                       // its header (without the digest)

// A valid small snapshot of `spec`, written to memory; its header and payload.
std::vector<uint8_t> make_file(const std::string& spec, SnapshotCompression comp,
                               bool windows = false) {
  auto c = PolicyCache::create(parse_policy_spec(spec), fuzz_context(24, windows));
  for (int i = 0; i < 3; ++i) step(*c, 0, 8, false, 10 + i);
  c->end_prefill();
  SnapshotDocument d;
  d.tokens.resize(24);
  for (int i = 0; i < 24; ++i) d.tokens[i] = i % 16;
  d.context_begin = 2;
  d.chunk = 8;
  d.logits.assign(16, 0.5f);
  char tmpl[] = "/tmp/kvbench-fuzz-XXXXXX";
  const int fd = mkstemp(tmpl);
  close(fd);
  SnapshotOptions so;
  so.compression = comp;
  so.level = comp == SnapshotCompression::Zstd ? 3 : 6;
  save_cache_snapshot(tmpl, *c, d, fuzz_identity(), so);
  std::ifstream in(tmpl, std::ios::binary);
  std::vector<uint8_t> f{std::istreambuf_iterator<char>(in), {}};
  std::remove(tmpl);
  return f;
}

std::vector<uint8_t> seal(const std::string& header, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f = {'K', 'V', 'B', 'C', 'A', 'C', 'H', 'E', 1, 0, 0, 0, 0, 0, 0, 0};
  f.insert(f.end(), payload.begin(), payload.end());
  f.insert(f.end(), header.begin(), header.end());
  const uint32_t h = static_cast<uint32_t>(header.size());
  f.insert(f.end(), reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h) + 4);
  const std::string hex = sha256_hex(header.data(), header.size());
  for (int i = 0; i < 32; ++i)
    f.push_back(static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16)));
  for (char ch : std::string("KVBC-END")) f.push_back(static_cast<uint8_t>(ch));
  return f;
}

// Splits a file made by make_file into header text and payload.
void split(const std::vector<uint8_t>& f, std::string& header, std::vector<uint8_t>& payload) {
  uint32_t h;
  std::memcpy(&h, f.data() + f.size() - 44, 4);
  header.assign(f.end() - 44 - h, f.end() - 44);
  payload.assign(f.begin() + 16, f.end() - 44 - h);
}

void write_seeds(const std::string& dir) {
  int n = 0;
  auto put = [&](uint8_t mode, const std::vector<uint8_t>& body) {
    std::ofstream out(dir + "/seed-" + std::to_string(mode) + "-" + std::to_string(n++),
                      std::ios::binary);
    out.put(static_cast<char>(mode));
    out.write(reinterpret_cast<const char*>(body.data()),
              static_cast<std::streamsize>(body.size()));
  };
  for (const char* spec :
       {"full", "h2o:budget=12+int8+offload:page=4", "kivi2:group=8,residual=8",
        "snapkv:budget=10,window=4+merge", "mixed:full=0.5", "tova:budget=8+int4+pyramid"}) {
    const auto f = make_file(spec, SnapshotCompression::Zstd);
    std::string header;
    std::vector<uint8_t> payload;
    split(f, header, payload);
    std::vector<char> raw;
    decompress_payload(payload, SnapshotCompression::Zstd, 1 << 20, raw);
    put(1, {raw.begin(), raw.end()});
    if (std::string(spec) == "full") {
      put(0, f);
      put(2, payload);
      put(4, {header.begin(), header.end()});
      std::string gh;
      std::vector<uint8_t> gp;
      split(make_file(spec, SnapshotCompression::Gzip), gh, gp);
      put(3, gp);
    }
  }
  // Sliding-window layers, contiguous positions re-rotated in halves.
  for (const char* spec : {"streaming:budget=6,sinks=1,pos=contiguous",
                           "h2o:budget=12,layers=global+offload:page=4"}) {
    std::string header;
    std::vector<uint8_t> payload;
    split(make_file(spec, SnapshotCompression::Zstd, true), header, payload);
    std::vector<char> raw;
    decompress_payload(payload, SnapshotCompression::Zstd, 1 << 20, raw);
    put(1, {raw.begin(), raw.end()});
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  split(make_file("h2o:budget=12+offload:page=4", SnapshotCompression::Zstd), seed_header,
        compressed_payload_seed);
  if (const char* dir = std::getenv("KVBENCH_SNAPSHOT_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 5;
  const std::span<const uint8_t> body(data + 1, size - 1);
  SnapshotExpect expect;
  expect.model = fuzz_identity();
  try {
    switch (mode) {
      case 0:
      case 4: {
        std::unique_ptr<PolicyCache> cache;
        const std::vector<uint8_t> file =
            mode == 0 ? std::vector<uint8_t>(body.begin(), body.end())
                      : seal(std::string(body.begin(), body.end()), compressed_payload_seed);
        load_cache_snapshot_bytes(file, "fuzz.kvc", expect, cache);
        if (!cache) std::abort();
        exercise(*cache);
        break;
      }
      case 1: {
        std::istringstream in(std::string(body.begin(), body.end()));
        StateReader r(in, body.size(), "payload");
        SnapshotPayload p = read_snapshot_payload(r);
        // Accepted: written back it is exactly what was read.
        const std::string again = payload_bytes(*p.cache, p.doc);
        if (again.size() != r.consumed() ||
            std::memcmp(again.data(), body.data(), again.size()) != 0)
          std::abort();
        exercise(*p.cache);
        break;
      }
      case 2:
      case 3: {
        std::vector<char> out;
        decompress_payload(body, mode == 2 ? SnapshotCompression::Zstd : SnapshotCompression::Gzip,
                           1 << 22, out);
        break;
      }
    }
  } catch (const SnapshotError&) {
  }
  return 0;
}
