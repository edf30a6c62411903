// The `kvzip` scorer (its declaration at the end): KVzip (Kim et al. 2025,
// arXiv 2505.23416; kvpress 0.5.5's KVzipPress). Query-agnostic: once the
// prompt is in, the caller runs the reconstruction pass
// (policies/reconstruction.h; the harness: harness/reconstruction.h), which
// asks the model to repeat the prompt after its template head and
// teacher-forces it; an entry's priority is the most attention any row of
// that pass pays it, in a softmax restricted to the sinks, the entry's own
// chunk and the pass (its table, PolicyCache::set_importance). The first
// `sinks` entries are never evicted (kvpress: max + 1); the template head
// after them is never reconstructed, so it scores 0 and goes first.
//
// kvpress's selection is global (layerwise=False): `kvzip:budget=0.5+global`
// keeps L x H x n - int(L x H x n x 0.5) entries over every layer and head;
// layerwise=True is `+adakv:floor=0` (kvbench's rounding: H x round(b n)
// per layer). With the default uniform allocator every head keeps its budget.
// kvpress refuses Gemma 3; here a local layer's pass sees what the layer
// holds (its window), so only those entries are scored and kept.
#include <algorithm>
#include <cstdint>

#include "policies/params.h"
#include "policies/scorer.h"

namespace kvbench {
namespace {

class KvzipScorer final : public Scorer {
 public:
  explicit KvzipScorer(const ComponentSpec& s)
      : Scorer(s),
        sinks_(static_cast<int>(s.get_int("sinks"))),
        chunk_(static_cast<int>(s.get_int("chunk"))) {
    // Scores exist once, for the prompt: kvpress compresses after prefill.
    timing_ = Timing::Once;
  }
  ScorerNeeds needs() const override {
    ScorerNeeds n;
    n.reconstruction = true;
    n.reconstruction_chunk = chunk_;
    n.reconstruction_sinks = sinks_;
    return n;
  }
  void priorities(const ScoreInput& in, float* out) const override {
    // Stream index = token index for a prompt prefilled from empty (the
    // pass checks it), so the sinks are the first `sinks` tokens.
    for (int32_t i = 0; i < in.n; ++i)
      out[i] = in.src[i] < sinks_ ? kKeep : in.importance ? in.importance[i] : 0.0f;
  }

 private:
  int sinks_, chunk_;
};

}  // namespace

ComponentInfo declare_kvzip() {
  ComponentInfo c = scorer_component<KvzipScorer>(
      "kvzip",
      "KVzip: keeps what the model attends most while repeating the prompt (a reconstruction "
      "pass after prefill; +global is kvpress's default selection)",
      {budget_param(),
       {"sinks", ParamType::Int, "4", "first entries never evicted, in every pass's softmax", 0,
        1e6},
       {"chunk", ParamType::Int, "2048", "prompt tokens reconstructed per pass", 1, 1e6}});
  c.example = "chunk=32";
  return c;
}

}  // namespace kvbench
