// The `chunkkv` extra (its declaration at the end): ChunkKV (2025, arXiv
// 2502.00299; kvpress's ChunkKVPress) as a part wrapped around any scorer
// (kvpress wraps SnapKV: `snapkv+chunkkv`). A layer keeps whole chunks of
// `length` consecutive tokens, the same for every head: the scorer's
// priorities are summed over the layer's KV heads, each chunk (from the
// first cached position; the last one may be shorter) scores the mean of
// its tokens' sums, and the top k chunks stay, k = max(1, int(chunks x b))
// for a ratio budget b (kvpress's int(nc (1 - r))), or as many whole chunks
// as the token budget holds. A layer therefore keeps whole chunks, not the
// budget's token count (kvpress: 269 tokens of 569 at a ratio of 0.5 where
// SnapKV keeps 284). Ties between chunk scores: the later chunk stays.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <tuple>
#include <vector>

#include "model/common/error.h"
#include "policies/part.h"
#include "policies/registry.h"

namespace kvbench {
namespace {

// The layer's tokens by stream index: each one's chunk and the chunks'
// scores (the mean over a chunk's tokens of their priorities summed over
// the heads).
struct Chunks {
  std::vector<int32_t> src;    // sorted
  std::vector<int32_t> chunk;  // [src] its chunk
  std::vector<double> score;   // [chunks]
  int32_t chunk_of(int32_t s) const {
    return chunk[std::lower_bound(src.begin(), src.end(), s) - src.begin()];
  }
};

class ChunkPart final : public Part {
 public:
  ChunkPart(int32_t length, const Budget& budget) : length_(length), budget_(budget) {}

  // Every token's priority becomes its chunk's score (in every head).
  void combine(LayerWork& w) const override {
    const Chunks& c = chunks(w);
    for (size_t h = 0; h < w.cand.size(); ++h)
      for (int32_t i = 0; i < w.cand[h].size(); ++i)
        w.prio[h][i] = static_cast<float>(c.score[c.chunk_of(w.cand[h].src[i])]);
  }

  // The top chunks stay; every head keeps their tokens and nothing else.
  void allocate(LayerWork& w, std::span<int32_t> keep) const override {
    const Chunks& c = chunks(w);
    const int32_t n = static_cast<int32_t>(c.score.size());
    if (n == 0) return;
    const int64_t k = std::clamp<int64_t>(
        budget_.ratio ? static_cast<int64_t>(n * budget_.value) : keep[0] / length_, 1, n);
    static thread_local std::vector<int32_t> ranked;
    ranked.resize(n);
    for (int32_t i = 0; i < n; ++i) ranked[i] = i;
    std::sort(ranked.begin(), ranked.end(), [&](int32_t a, int32_t b) {
      return c.score[a] != c.score[b] ? c.score[a] > c.score[b] : a > b;
    });
    static thread_local std::vector<char> chosen;
    chosen.assign(n, 0);
    for (int64_t r = 0; r < k; ++r) chosen[ranked[r]] = 1;
    for (size_t h = 0; h < w.cand.size(); ++h) {
      keep[h] = 0;
      for (int32_t i = 0; i < w.cand[h].size(); ++i) {
        if (chosen[c.chunk_of(w.cand[h].src[i])])
          ++keep[h];
        else
          w.prio[h][i] = -std::numeric_limits<float>::infinity();
      }
    }
  }

 private:
  const Chunks& chunks(const LayerWork& w) const {
    static thread_local Chunks c;
    static thread_local std::vector<std::tuple<int32_t, int32_t, double>> tokens;  // src, pos, sum
    tokens.clear();
    for (size_t h = 0; h < w.cand.size(); ++h)
      for (int32_t i = 0; i < w.cand[h].size(); ++i)
        tokens.emplace_back(w.cand[h].src[i], w.cand[h].pos[i], w.prio[h][i]);
    std::sort(tokens.begin(), tokens.end(),
              [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    size_t n = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (n > 0 && std::get<0>(tokens[n - 1]) == std::get<0>(tokens[i]))
        std::get<2>(tokens[n - 1]) += std::get<2>(tokens[i]);
      else
        tokens[n++] = tokens[i];
    }
    tokens.resize(n);
    // Chunks in position order from the first cached token.
    static thread_local std::vector<int32_t> by_pos;
    by_pos.resize(n);
    for (size_t i = 0; i < n; ++i) by_pos[i] = static_cast<int32_t>(i);
    std::sort(by_pos.begin(), by_pos.end(), [&](int32_t a, int32_t b) {
      return std::get<1>(tokens[a]) != std::get<1>(tokens[b])
                 ? std::get<1>(tokens[a]) < std::get<1>(tokens[b])
                 : std::get<0>(tokens[a]) < std::get<0>(tokens[b]);
    });
    const size_t n_chunks = (n + length_ - 1) / length_;
    c.src.resize(n);
    c.chunk.resize(n);
    c.score.assign(n_chunks, 0.0);
    for (size_t r = 0; r < n; ++r) {
      const size_t i = by_pos[r], chunk = r / length_;
      c.src[i] = std::get<0>(tokens[i]);
      c.chunk[i] = static_cast<int32_t>(chunk);
      c.score[chunk] += std::get<2>(tokens[i]);
    }
    for (size_t k = 0; k < n_chunks; ++k)
      c.score[k] /= static_cast<double>(std::min<size_t>(length_, n - k * length_));
    return c;
  }

  int32_t length_;
  Budget budget_;
};

std::vector<std::shared_ptr<const Part>> chunkkv_parts(const ComponentSpec& s, const PartEnv& env) {
  return {std::make_shared<ChunkPart>(static_cast<int32_t>(s.get_int("length")),
                                      env.scorer.budget_setting())};
}

void check_chunkkv(const PolicySpec& s, const ComponentSpec&) {
  if (s.allocator.name != "uniform")
    throw InputError("policy '" + to_string(s) +
                     "': chunkkv keeps one set of whole chunks per layer; it takes the uniform "
                     "allocator only");
}

}  // namespace

ComponentInfo declare_chunkkv() {
  ComponentInfo c = extra_component(
      "chunkkv",
      "ChunkKV: a layer keeps whole chunks of consecutive tokens, the same for every head, chosen "
      "by the mean of the scorer's priorities summed over the heads",
      {{"length", ParamType::Int, "20", "tokens per chunk", 1, 1e6}}, chunkkv_parts, check_chunkkv);
  // Parameters that fit the registry-wide tests' small budgets.
  c.example = "length=3";
  return c;
}

}  // namespace kvbench
