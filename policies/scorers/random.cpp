// The `random` scorer (its declaration at the end).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

// A control: a seeded hash of (seed, layer, head, stream index), so an
// entry's fate does not depend on when maintenance runs.
class RandomScorer final : public Scorer {
 public:
  explicit RandomScorer(const ComponentSpec& spec)
      : Scorer(spec), seed_(static_cast<uint64_t>(spec.get_int("seed"))) {}
  void priorities(const ScoreInput& in, float* out) const override {
    const uint64_t seed = seed_ != 0 ? seed_ : in.seed;
    for (int32_t i = 0; i < in.n; ++i) {
      uint64_t z = seed * 0x9E3779B97F4A7C15ull + (static_cast<uint64_t>(in.layer) << 48) +
                   (static_cast<uint64_t>(in.kv_head) << 32) + static_cast<uint32_t>(in.src[i]);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      out[i] = static_cast<float>(z >> 40) * 0x1.0p-24f;
    }
  }

 private:
  uint64_t seed_;
};

}  // namespace

ComponentInfo declare_random() {
  return scorer_component<RandomScorer>(
      "random", "seeded uniform random eviction (a control)",
      scorer_params("stream", {{"seed", ParamType::Int, "0",
                                "random seed (0 = the cache context's seed)", 0, 9e15}}));
}

}  // namespace kvbench
