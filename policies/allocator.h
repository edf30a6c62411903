// An allocator (immutable, shared between clones) decides how many entries each KV head of a layer
// keeps, from the per-head budget B of the policy:
//   uniform  every head keeps B
//   pyramid  PyramidKV: layer l keeps a linearly decreasing share, largest at
//            the bottom, the same total over the layers; only the part of
//            the budget the scorer does not reserve (its window) is spread
//   adakv    Ada-KV: the layer's B x n_kv_heads entries go to the highest
//            priorities across its heads, each head keeping at least
//            floor x B (the safeguard)
//   global   KVzip's default: one choice across every layer and head the
//            policy acts on (cross_layer()), the lowest priorities evicted
//            wherever they are; no floor
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace kvbench {

struct ComponentSpec;

struct AllocationInput {
  int layer = 0;
  int n_layers = 0;
  int32_t budget = 0;    // per-head budget B
  int32_t reserved = 0;  // of which the scorer protects (pyramid leaves it per layer)
  // Per head: its entries' priorities (adakv reads them; others only the sizes).
  std::span<const std::span<const float>> priorities;
};

// A cross-layer allocation (Allocator::cross_layer): every head of every
// layer the policy acts on at once, heads that keep everything left out.
struct CrossLayerInput {
  int64_t keep = 0;  // entries kept over all these heads together
  // Per head (layer-major): its entries' priorities and stream indices.
  std::span<const std::span<const float>> priorities;
  std::span<const std::span<const int32_t>> src;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual bool needs_priorities() const { return false; }
  // true: maintenance scores every layer before it evicts any, and
  // keep_counts_across() chooses for all of them (PolicyCache::maintain).
  virtual bool cross_layer() const { return false; }
  // keep: [heads of in.priorities] entries each keeps, in.keep in total.
  virtual void keep_counts_across(const CrossLayerInput& in, std::span<int32_t> keep) const {}
  // keep: [n_kv_heads] entries each head keeps (<= its number of entries).
  virtual void keep_counts(const AllocationInput& in, std::span<int32_t> keep) const = 0;
  // How many of each head's top-priority entries the allocation guarantees
  // before heads compete (Ada-KV's safeguard, 0 for the others): a part
  // that re-ranks within a head's count keeps them (critical, as kvpress's
  // CriticalAdaKVPress carries the safeguard through its second stage).
  virtual int32_t guaranteed(const AllocationInput& in) const { return 0; }
  // The per-head budget of `layer` for bookkeeping and tests (adakv: the
  // layer's average).
  virtual int32_t layer_budget(int layer, int n_layers, int32_t budget, int32_t reserved) const {
    return budget;
  }
};

// PyramidKV's per-layer budgets (same total as n_layers x budget up to rounding).
std::vector<int32_t> pyramid_budgets(int n_layers, int32_t budget, int32_t reserved, double beta);

}  // namespace kvbench
