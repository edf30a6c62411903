// The `think` extra (its declaration at the end): ThinK (Xu et al. 2024,
// arXiv 2407.21018; kvpress's ThinKPress) prunes key channels, not tokens.
// At the end of a prompt, per layer and KV head, each channel c scores
//   qs_c x ks_c,  qs_c = the mean over the last `window` queries and the
//                        group's query heads of q_c^2 (rotated queries),
//                 ks_c = the mean over the head's entries of k_c^2,
// (the paper's |Q_c K_c^T|_F = |Q_c| |K_c| per channel, as kvpress ranks
// them), and the int(head_dim x channels) lowest become 0 in the prompt's
// keys. Values and later keys (the answer's) keep every channel. Composes
// after any scorer, as kvpress's ComposedPress: `snapkv+think` prunes the
// channels of the keys SnapKV kept (snap_think), `full+think` of every key.
//
// The store keeps rows whole: a pruned channel is a stored 0, so memory is
// what the storage alone gives (kvpress credits nothing either; the paper
// stores the kept channels and a mask). Channels are numbered as the model
// stores them: llama's GGUF pairs (2i, 2i + 1) for RoPE where transformers
// pairs (i, i + d/2), so the same channel has another index there.
#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "model/common/error.h"
#include "policies/part.h"
#include "policies/registry.h"

namespace kvbench {
namespace {

class ThinkPart final : public Part {
 public:
  ThinkPart(double channels, int window) : channels_(channels), window_(window) {}

  int queries_kept() const override { return window_; }
  bool changes_keys() const override { return true; }

  void after_prompt(const PromptEnd& e) const override {
    if (e.paused) return;
    const int count = std::min(e.queries.count(e.layer), window_);
    if (count == 0) return;
    const KvShape& sh = e.store.shape();
    const int d = sh.head_dim, group = sh.n_q_heads / sh.n_kv_heads;
    const int pruned = static_cast<int>(d * channels_);
    if (pruned == 0) return;
    static thread_local std::vector<double> qs, ks;
    static thread_local std::vector<float> keys;
    static thread_local std::vector<int> order;
    static thread_local std::vector<char> zero;
    for (int h = 0; h < sh.n_kv_heads; ++h) {
      qs.assign(d, 0.0);
      for (int i = e.queries.count(e.layer) - count; i < e.queries.count(e.layer); ++i)
        for (int g = 0; g < group; ++g) {
          const float* q = e.queries.query(e.layer, i) + int64_t{h * group + g} * d;
          for (int c = 0; c < d; ++c) qs[c] += double{q[c]} * q[c];
        }
      const KvHeadView& view = e.store.view_for(e.seq, e.layer, h);
      const int32_t n = view.size();
      if (n == 0) continue;
      keys.resize(static_cast<size_t>(n) * d);
      const float* k = view.keys(0, n, keys.data());
      ks.assign(d, 0.0);
      for (int32_t j = 0; j < n; ++j)
        for (int c = 0; c < d; ++c) ks[c] += double{k[int64_t{j} * d + c]} * k[int64_t{j} * d + c];
      // The common factors (1 / (count x group), 1 / n) change no order.
      order.resize(d);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return qs[a] * ks[a] < qs[b] * ks[b]; });
      zero.assign(d, 0);
      for (int r = 0; r < pruned; ++r) zero[order[r]] = 1;
      e.store.zero_key_channels(e.seq, e.layer, h, zero);
    }
  }

 private:
  double channels_;
  int window_;
};

std::vector<std::shared_ptr<const Part>> think_parts(const ComponentSpec& s, const PartEnv&) {
  return {
      std::make_shared<ThinkPart>(s.get_number("channels"), static_cast<int>(s.get_int("window")))};
}

void check_think(const PolicySpec& s, const ComponentSpec&) {
  if (s.storage.name == "kivi2")
    throw InputError("policy '" + to_string(s) +
                     "': think rewrites keys, which kivi2 quantizes per channel block");
}

}  // namespace

ComponentInfo declare_think() {
  return extra_component(
      "think",
      "ThinK: at the end of the prompt, each KV head's key channels of lowest "
      "query x key energy become 0 in the prompt's keys",
      {{"channels", ParamType::Number, "0.5", "share of each head's key channels pruned", 0, 1},
       {"window", ParamType::Int, "32", "last prompt queries that score the channels", 1, 1e6}},
      think_parts, check_think);
}

}  // namespace kvbench
