// Exact memory accounting of a cache: bytes actually held (not capacity),
// split by tier (hot: what attention reads; cold: offloaded pages), layer and
// precision, and by kind:
//   kv      K and V elements or codes
//   scales  quantization scales, minimums / zero points, KIVI block params
//   meta    per-entry metadata: position, stream index, sequence set, the
//           policy's statistics (attention sums, key norms); cold pages' key
//           min/max bounds
// For `full` at f32, hot.kv = n_layers x n_kv_heads x head_dim x n_tokens x 2 x 4.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvbench {

struct MemoryBytes {
  uint64_t kv = 0;
  uint64_t scales = 0;
  uint64_t meta = 0;
  uint64_t entries = 0;  // K/V entries (token x head) held
  uint64_t total() const { return kv + scales + meta; }
  MemoryBytes& operator+=(const MemoryBytes& o) {
    kv += o.kv;
    scales += o.scales;
    meta += o.meta;
    entries += o.entries;
    return *this;
  }
  bool operator==(const MemoryBytes&) const = default;
};

struct MemoryReport {
  MemoryBytes hot, cold;
  std::vector<MemoryBytes> hot_layers, cold_layers;  // [n_layers]
  std::map<std::string, MemoryBytes> hot_precisions,
      cold_precisions;  // "f32", "int8", "kivi2", ...
  // Policy state outside the entries: kept queries (SnapKV window, offload),
  // oracle importance tables.
  uint64_t policy_state = 0;
  uint64_t total() const { return hot.total() + cold.total() + policy_state; }
};

// Adds bytes to the right tier / layer / precision.
class MemoryTally {
 public:
  MemoryTally(MemoryReport& r, int layer, bool cold) : r_(r), layer_(layer), cold_(cold) {}
  void add(const std::string& precision, const MemoryBytes& b) {
    (cold_ ? r_.cold : r_.hot) += b;
    (cold_ ? r_.cold_layers : r_.hot_layers)[layer_] += b;
    (cold_ ? r_.cold_precisions : r_.hot_precisions)[precision] += b;
  }

 private:
  MemoryReport& r_;
  int layer_;
  bool cold_;
};

nlohmann::json to_json(const MemoryBytes& b);
nlohmann::json to_json(const MemoryReport& r);

}  // namespace kvbench
