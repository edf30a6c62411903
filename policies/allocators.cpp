#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <vector>

#include "model/common/error.h"
#include "policies/allocator.h"
#include "policies/policy_spec.h"

namespace kvbench {
namespace {

class UniformAllocator final : public Allocator {
 public:
  explicit UniformAllocator(const ComponentSpec&) {}
  void keep_counts(const AllocationInput& in, std::span<int32_t> keep) const override {
    for (size_t h = 0; h < keep.size(); ++h)
      keep[h] = std::min<int32_t>(in.budget, static_cast<int32_t>(in.priorities[h].size()));
  }
};

class PyramidAllocator final : public Allocator {
 public:
  explicit PyramidAllocator(const ComponentSpec& s) : beta_(s.get_number("beta")) {}
  int32_t layer_budget(int layer, int n_layers, int32_t budget, int32_t reserved) const override {
    // Recomputed per call: a handful of layers, once per maintenance.
    return pyramid_budgets(n_layers, budget, reserved, beta_)[layer];
  }
  void keep_counts(const AllocationInput& in, std::span<int32_t> keep) const override {
    const int32_t b = layer_budget(in.layer, in.n_layers, in.budget, in.reserved);
    for (size_t h = 0; h < keep.size(); ++h)
      keep[h] = std::min<int32_t>(b, static_cast<int32_t>(in.priorities[h].size()));
  }

 private:
  double beta_;
};

// Ada-KV: every head first keeps its top floor x B entries (the safeguard),
// then the layer's remaining budget goes to the highest priorities left
// across all heads.
class AdaKvAllocator final : public Allocator {
 public:
  explicit AdaKvAllocator(const ComponentSpec& s) : floor_(s.get_number("floor")) {}
  bool needs_priorities() const override { return true; }
  void keep_counts(const AllocationInput& in, std::span<int32_t> keep) const override {
    const size_t heads = keep.size();
    const int64_t total = int64_t{in.budget} * static_cast<int64_t>(heads);
    const int32_t floor = guaranteed(in);
    static thread_local std::vector<std::vector<float>> sorted;
    sorted.resize(heads);
    int64_t used = 0, available = 0;
    for (size_t h = 0; h < heads; ++h) {
      const auto& p = in.priorities[h];
      sorted[h].assign(p.begin(), p.end());
      std::sort(sorted[h].begin(), sorted[h].end(), std::greater<float>());
      keep[h] = std::min<int32_t>(floor, static_cast<int32_t>(p.size()));
      used += keep[h];
      available += static_cast<int64_t>(p.size());
    }
    // Merge the heads' remaining sorted lists, highest first (ties: lower head).
    int64_t left = std::min(total, available) - used;
    while (left > 0) {
      int best = -1;
      for (size_t h = 0; h < heads; ++h) {
        if (keep[h] >= static_cast<int32_t>(sorted[h].size())) continue;
        if (best < 0 || sorted[h][keep[h]] > sorted[best][keep[best]]) best = static_cast<int>(h);
      }
      assert(best >= 0);
      ++keep[best];
      --left;
    }
  }
  int32_t guaranteed(const AllocationInput& in) const override {
    return static_cast<int32_t>(std::ceil(floor_ * in.budget));
  }

 private:
  double floor_;
};

// KVzip's global selection (kvpress's KVzipPress, layerwise=False): the
// cache keeps in.keep entries over every layer and head at once, so layers
// and heads end with different counts. Evicted: the lowest priorities, ties
// the older entry first (as evict_head), then the lower layer and head, so
// each head's share is exactly what its own eviction order drops.
class GlobalAllocator final : public Allocator {
 public:
  explicit GlobalAllocator(const ComponentSpec&) {}
  bool needs_priorities() const override { return true; }
  bool cross_layer() const override { return true; }
  // One layer alone (maintenance asks keep_counts_across instead): the
  // layer's budget over its heads, ties by candidate order.
  void keep_counts(const AllocationInput& in, std::span<int32_t> keep) const override {
    std::vector<std::vector<int32_t>> order(keep.size());
    std::vector<std::span<const int32_t>> spans(keep.size());
    for (size_t h = 0; h < keep.size(); ++h) {
      order[h].resize(in.priorities[h].size());
      std::iota(order[h].begin(), order[h].end(), 0);
      spans[h] = order[h];
    }
    CrossLayerInput c;
    c.keep = int64_t{in.budget} * static_cast<int64_t>(keep.size());
    c.priorities = in.priorities;
    c.src = spans;
    keep_counts_across(c, keep);
  }
  void keep_counts_across(const CrossLayerInput& in, std::span<int32_t> keep) const override {
    struct Entry {
      float p;
      int32_t src;
      int32_t head;
    };
    std::vector<Entry> all;
    for (size_t h = 0; h < keep.size(); ++h) {
      const auto& p = in.priorities[h];
      keep[h] = static_cast<int32_t>(p.size());
      for (size_t i = 0; i < p.size(); ++i)
        all.push_back({p[i], in.src[h][i], static_cast<int32_t>(h)});
    }
    const int64_t drop = static_cast<int64_t>(all.size()) - std::max<int64_t>(0, in.keep);
    if (drop <= 0) return;
    std::nth_element(all.begin(), all.begin() + (drop - 1), all.end(),
                     [](const Entry& a, const Entry& b) {
                       if (a.p != b.p) return a.p < b.p;
                       if (a.src != b.src) return a.src < b.src;
                       return a.head < b.head;
                     });
    for (int64_t i = 0; i < drop; ++i) --keep[all[i].head];
  }
};

}  // namespace

std::vector<int32_t> pyramid_budgets(int n_layers, int32_t budget, int32_t reserved, double beta) {
  // PyramidKV: the spread part C = budget - reserved runs linearly from
  // max = 2C - C/beta at layer 0 to min = C/beta at the top, so the mean is
  // C; the reserved window is added to every layer. (PyramidKV rounds the
  // step down, which overshoots the total; real-valued steps keep it.)
  std::vector<int32_t> out(n_layers, budget);
  if (n_layers <= 1) return out;
  const double c = std::max<int32_t>(0, budget - reserved);
  const double lo = c / beta, hi = 2.0 * c - lo;
  for (int l = 0; l < n_layers; ++l) {
    const double b = hi - (hi - lo) * l / (n_layers - 1);
    out[l] =
        std::max<int32_t>(1, static_cast<int32_t>(std::lround(b)) + std::min(reserved, budget));
  }
  return out;
}

ComponentInfo declare_uniform() {
  return object_component<UniformAllocator>("uniform", "every KV head keeps the budget", {});
}
ComponentInfo declare_pyramid() {
  ComponentInfo c = object_component<PyramidAllocator>(
      "pyramid", "PyramidKV: per-layer budgets decreasing linearly from bottom to top, same total",
      {{"beta", ParamType::Number, "20", "top layer keeps budget / beta", 1, 1e6}});
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "beta=4";
  return c;
}
ComponentInfo declare_adakv() {
  return object_component<AdaKvAllocator>(
      "adakv",
      "Ada-KV: a layer's budget goes to its heads' highest priorities, with a per-head floor",
      {{"floor", ParamType::Number, "0.2", "share of the budget every head keeps at least", 0, 1}});
}

ComponentInfo declare_global() {
  ComponentInfo c = object_component<GlobalAllocator>(
      "global",
      "KVzip's: the lowest priorities over every layer and head at once (layers and heads keep "
      "different counts), no floor",
      {});
  // Parts that re-rank within a layer's heads after allocation read views
  // that a cross-layer maintenance no longer holds by then.
  c.check = [](const PolicySpec& spec, const ComponentSpec&) {
    for (const auto& e : spec.extras)
      if (e.name == "chunkkv" || e.name == "critical")
        throw InputError("policy '" + to_string(spec) + "': +" + e.name +
                         " re-allocates within a layer, which the global allocator does not "
                         "support (use uniform or adakv)");
  };
  return c;
}

}  // namespace kvbench
