// Forged model files and cache snapshots for the hostile tests: the tiny
// model as editable data (metadata and tensors) written back as a GGUF, and a
// snapshot's decompressed payload edited and sealed again. Nothing in either
// is a secret (GGUF has no checksum; a snapshot's checksums are plain
// sha256), so anyone can make these files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gguf/gguf.h"

namespace kvbench::test {

// --- GGUF

struct ForgedTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> ne;
  std::vector<uint8_t> data;
};

struct ForgedModel {
  std::vector<std::pair<std::string, GgufValue>> keys;  // in file order
  std::vector<ForgedTensor> tensors;                    // in file order

  // The value of `key` (added at the end when absent).
  GgufValue& key(const std::string& key);
  void drop_key(const std::string& key);
  // The tensor `name` (nullptr when absent).
  ForgedTensor* tensor(const std::string& name);
  // Drops the tensors `pred` picks.
  void drop_tensors(const std::function<bool(const std::string& name)>& pred);
  // Copies of the tensors of layer `from` as layer `to` (blk.<to>.*), at the end.
  void copy_layer(int from, int to);
  void write(const std::string& path) const;
};

// The tests' tiny model: llama with the BPE vocabulary, or gemma3 with the
// SPM one (model/testing/tiny_model.h).
ForgedModel tiny_model(bool gemma3);

// Metadata values of each type.
GgufValue gguf_u32(uint64_t v);
GgufValue gguf_i32(int64_t v);
GgufValue gguf_f32(double v);
GgufValue gguf_f64(double v);
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_array(GgufType elem, std::vector<GgufValue> items);

// --- snapshots

// Offsets in a decompressed payload written for the policy `full`: the
// position of layer 0 / KV head 0's first entry (its main segment is the
// first "ROWS" section: tag, codec, group, statistics per entry, count, then
// the positions), and sequence 0's evicted-position mark (after the "STOR"
// tag: tokens streamed, known sequences, count, then one mark per sequence).
size_t first_position_offset(const std::string& raw);
size_t evicted_mark_offset(const std::string& raw);

// Writes an int32 in the snapshot's byte order (little-endian, the host's).
void put_i32(std::string& raw, size_t at, int32_t v);

// Lets `edit` rewrite a snapshot's header (it returns the new header text)
// and seals the file again: the header's size and checksum recomputed (no
// secret: anyone can).
void forge_header(const std::string& kvc,
                  const std::function<std::string(nlohmann::ordered_json&)>& edit);

// Decompresses the snapshot's (zstd) payload, lets `edit` change its bytes
// (keeping their number), compresses it again and seals the file: the
// header's payload.bytes and payload.sha256 and the header's own checksum
// recomputed.
void forge_payload(const std::string& kvc, const std::function<void(std::string& raw)>& edit);

}  // namespace kvbench::test
