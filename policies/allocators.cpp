#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <vector>

#include "policies/allocator.h"
#include "policies/policy_spec.h"

namespace kvbench {
namespace {

class UniformAllocator final : public Allocator {
 public:
  void keep_counts(const AllocationInput& in, std::span<int32_t> keep) const override {
    for (size_t h = 0; h < keep.size(); ++h)
      keep[h] = std::min<int32_t>(in.budget, static_cast<int32_t>(in.priorities[h].size()));
  }
};

class PyramidAllocator final : public Allocator {
 public:
  explicit PyramidAllocator(double beta) : beta_(beta) {}
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
  explicit AdaKvAllocator(double floor) : floor_(floor) {}
  bool needs_priorities() const override { return true; }
  void keep_counts(const AllocationInput& in, std::span<int32_t> keep) const override {
    const size_t heads = keep.size();
    const int64_t total = int64_t{in.budget} * static_cast<int64_t>(heads);
    const int32_t floor = static_cast<int32_t>(std::ceil(floor_ * in.budget));
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

 private:
  double floor_;
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

std::shared_ptr<const Allocator> make_uniform_allocator(const ComponentSpec&) {
  return std::make_shared<UniformAllocator>();
}
std::shared_ptr<const Allocator> make_pyramid_allocator(const ComponentSpec& s) {
  return std::make_shared<PyramidAllocator>(s.get_number("beta"));
}
std::shared_ptr<const Allocator> make_adakv_allocator(const ComponentSpec& s) {
  return std::make_shared<AdaKvAllocator>(s.get_number("floor"));
}

}  // namespace kvbench
