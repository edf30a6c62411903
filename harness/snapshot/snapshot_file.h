// Cache snapshot files (.kvc): a prefilled (possibly compressed) KV cache on
// disk, with everything needed to refuse it when anything it depends on
// differs. The cache state itself is the policies layer's
// (PolicyCache::save_state, policies/cache_state.cpp); this file is the
// container around it: metadata, compression, checksums, atomic writes and
// validation. Layout (docs/SNAPSHOTS.md has the field list):
//
//   0        "KVBCACHE"             magic
//   8        u32 format version     (1)
//   12       u32 0                  reserved
//   16       payload                P bytes, zstd or gzip (Boost.Iostreams)
//   16+P     header                 H bytes of JSON: metadata, sizes, payload checksum
//   16+P+H   u32 H
//   20+P+H   sha256(header)         32 bytes
//   52+P+H   "KVBC-END"             end marker (a truncated file has none)
//
// The payload (uncompressed) is a "DOCS" section — token ids, where the
// context starts, chunk size, activation precision, the next-token logits
// after the last token — followed by the cache state. The header comes last
// so the payload streams through the compressor straight into the file.
//
// Loading checks, before the live cache is touched: the container (magic,
// end marker, version, header checksum, schema); the fields that must match
// this run (format, kvbench version, model file sha256, size and
// hyper-parameters, tokenizer fingerprint, activation precision) — one
// error listing every field that differs; the payload's size and sha256;
// then it decompresses and parses into a new cache and checks every field
// the header states about it (document, KV precision, policy, memory) against
// what was actually read. Any failure is a SnapshotError.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "policies/policy_cache.h"
#include "policies/state_io.h"

namespace kvbench {

// 2: a KIVI segment records which sides it quantizes (kivi2 keys= / values=).
// 3: the cache context records the RoPE pairing (NEOX) and, for models with
//    sliding-window layers (gemma3), each layer's window and the local RoPE.
inline constexpr uint32_t kSnapshotFormatVersion = 3;

enum class SnapshotCompression { Zstd, Gzip };
std::string_view compression_name(SnapshotCompression c);      // "zstd" / "gzip"
SnapshotCompression parse_compression(std::string_view name);  // InputError for others

// What a snapshot must match: the model file (sha256, size), its
// hyper-parameters and tokenizer (harness/snapshot/snapshot_model.h fills it from a
// LlamaModel).
struct ModelIdentity {
  std::string sha256;
  uint64_t file_bytes = 0;
  nlohmann::ordered_json hparams;  // {n_layers, dim, ..., rope_factors}
  std::string tokenizer;           // Tokenizer::fingerprint()
};

// The document held in the cache.
struct SnapshotDocument {
  std::vector<int32_t> tokens;      // the cached prefix: BOS, template head, preamble, context
  int64_t context_begin = 0;        // index of the context's first token in `tokens`
  int32_t chunk = 512;              // prefill chunk size (the question continues with it)
  std::string activations = "f32";  // activations_name(): "f32", "q8", "q8+bf16-attn", ...
  std::vector<float> logits;  // [n_vocab] next-token logits after the last token (may be empty)
};

struct SnapshotOptions {
  SnapshotCompression compression = SnapshotCompression::Zstd;
  int level = 3;  // zstd 1..19, gzip 1..9
};

struct SnapshotExpect {
  ModelIdentity model;
  std::string activations = "f32";
};

// Writes the snapshot atomically (temporary file in the same directory,
// fsync, rename). InputError when the cache is inside a step or the file
// cannot be written; no partial file is left behind.
void save_cache_snapshot(const std::string& path, const PolicyCache& cache,
                         const SnapshotDocument& doc, const ModelIdentity& model,
                         const SnapshotOptions& options = {});

// Validates everything, then replaces `cache` with the loaded one and
// returns the document. On any error throws SnapshotError ("<path>: <what>")
// and leaves `cache` exactly as it was.
SnapshotDocument load_cache_snapshot(const std::string& path, const SnapshotExpect& expect,
                                     std::unique_ptr<PolicyCache>& cache);

// --- lower levels (the CLI's `cache info`, tests, the fuzz target)

struct SnapshotInfo {
  nlohmann::ordered_json header;
  uint64_t file_bytes = 0;
};
// The header alone, container and header checksum checked (the payload is
// not read).
SnapshotInfo read_snapshot_info(const std::string& path);

// load_cache_snapshot over a file's bytes in memory; `name` is the path in messages.
SnapshotDocument load_cache_snapshot_bytes(std::span<const uint8_t> file, const std::string& name,
                                           const SnapshotExpect& expect,
                                           std::unique_ptr<PolicyCache>& cache);

// The uncompressed payload: the document section and the cache state.
struct SnapshotPayload {
  SnapshotDocument doc;
  std::unique_ptr<PolicyCache> cache;
};
void write_snapshot_payload(StateWriter& out, const PolicyCache& cache,
                            const SnapshotDocument& doc);
SnapshotPayload read_snapshot_payload(StateReader& in);

// What the header states about a payload: document, precision.kv, policy, memory.
nlohmann::ordered_json describe_payload(const SnapshotDocument& doc, const PolicyCache& cache);

// Decompresses `bytes` into `out`, refusing more than `max_bytes` of output.
void decompress_payload(std::span<const uint8_t> bytes, SnapshotCompression c, uint64_t max_bytes,
                        std::vector<char>& out);

}  // namespace kvbench
