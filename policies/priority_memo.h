// Keep-priorities shared by the branches of one shared prefill (the
// leaderboard's nested ratios). A configuration family (a spec whose
// budget alone differs: snapkv at 0.1, 0.25, ... 0.9) branches every cell
// from the same full cache after the prompt and compresses once, at
// end_prefill. A head's first scoring then reads exactly the same inputs in
// every member of the family, whatever its budget: the imported entries
// (their keys, values and statistics), the layer's recorded queries, and
// the scorer's parameters other than the budget. So the scorer's
// priorities, and CriticalKV's value norms through o_proj, are computed by
// the first member and reused by the others, bit for bit.
//
// What makes the reuse exact rather than hopeful:
//   - it is used only while start_policy finishes a Branch start (the
//     cache's first maintenance, on the imported state), and only for each
//     (layer, head)'s first scoring in that cache (PolicyCache tracks it);
//   - a stored row is reused only when the candidates are the same stream
//     indices in the same order, and the stream clock (now) and seed agree;
//   - the family key is the canonical spec with its budget removed, so
//     every other parameter, part and storage codec must match;
//   - scorers whose priorities read their keep count (h2o's and hybrid's
//     recent share, CaM's start) say so (Scorer::priorities_read_keep) and
//     are never memoized.
// tests/test_policy_start.cpp proves it on every spec the registry builds:
// each branch with a memo filled by another budget of its family equals the
// same branch computed alone.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace kvbench {

// What a memo row holds: the scorer's priorities, or a part's per-entry
// figure (CriticalKV's value norms).
enum class MemoKind { Priorities = 0, CriticalNorms = 1 };

class PriorityMemo {
 public:
  // The row for (family, kind, layer, head) when it was stored for the same
  // candidates (src, in order), clock and seed; else null. Values are kept
  // as double, which holds a float priority exactly.
  //   src: [n] candidate stream indices  ->  [n] values
  struct Hit {
    const std::vector<double>* values = nullptr;
    double seconds = 0;  // what computing them took
  };
  Hit find(const std::string& family, MemoKind kind, int layer, int head,
           std::span<const int32_t> src, int64_t now, uint64_t seed) const;
  // Stores (or replaces) the row. values: [src.size()]; seconds: what
  // computing them took (a reusing cell is charged it: find's `seconds`).
  void store(const std::string& family, MemoKind kind, int layer, int head,
             std::span<const int32_t> src, int64_t now, uint64_t seed,
             std::span<const double> values, double seconds);

  // Rows reused and stored, in all and of one kind.
  int64_t reused() const { return reused_[0] + reused_[1]; }
  int64_t reused(MemoKind kind) const { return reused_[static_cast<int>(kind)]; }
  int64_t computed() const { return computed_; }

 private:
  struct Row {
    std::vector<int32_t> src;
    int64_t now = 0;
    uint64_t seed = 0;
    std::vector<double> values;
    double seconds = 0;
  };
  std::map<std::tuple<std::string, int, int, int>, Row> rows_;
  mutable int64_t reused_[2] = {0, 0};
  int64_t computed_ = 0;
};

}  // namespace kvbench
