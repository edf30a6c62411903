#include "policies/parts/layer_sets.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace kvbench {
namespace {

class LayerSetsPart final : public Part {
 public:
  void combine(LayerWork& w) const override {
    const int H = static_cast<int>(w.cand.size());
    if (H < 2) return;
    // (stream index, priority) of every head's entries, summed per token.
    auto& by_src = w.pairs;
    by_src.clear();
    for (int h = 0; h < H; ++h)
      for (int32_t i = 0; i < w.cand[h].size(); ++i)
        by_src.emplace_back(w.cand[h].src[i], w.prio[h][i]);
    std::sort(by_src.begin(), by_src.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t n = 0;
    for (size_t i = 0; i < by_src.size(); ++i) {
      if (n > 0 && by_src[n - 1].first == by_src[i].first)
        by_src[n - 1].second += by_src[i].second;
      else
        by_src[n++] = by_src[i];
    }
    by_src.resize(n);
    for (int h = 0; h < H; ++h)
      for (int32_t i = 0; i < w.cand[h].size(); ++i) {
        auto it = std::lower_bound(by_src.begin(), by_src.end(), w.cand[h].src[i],
                                   [](const auto& e, int32_t s) { return e.first < s; });
        w.prio[h][i] = it->second;
      }
  }
};

}  // namespace

std::shared_ptr<const Part> make_layer_sets_part() { return std::make_shared<LayerSetsPart>(); }

}  // namespace kvbench
