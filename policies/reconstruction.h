// The reconstruction pass a scorer asks for with needs().reconstruction
// (KVzip, Kim et al. 2025, arXiv 2505.23416; kvpress's KVzipPress): once the
// prompt is in, the model is asked to repeat it, and the prompt's text is
// teacher-forced as the answer through the cache. How much attention each
// cached entry receives while the model "reads it back" is its importance.
//
//   passes = reconstruction_passes(prompt, layout, first_ids, next_ids, chunk)
//   for each pass: checkpoint, share the prompt's sequence, feed pass.ids
//     through a ReconstructionRecorder over the cache, roll back
//   recorder.tables() -> PolicyCache::set_importance, then end_prefill()
//
// The harness runs it (harness/reconstruction.h): it owns the model, the
// tokenizer and the chat template. This file is what the pass is, without
// any of them.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/ops/kv_cache.h"

namespace kvbench {

class ThreadPool;

// kvpress's repeat prompts (KVzipPress.prepare), encoded without BOS: the
// first chunk's, and the later chunks', which the previous chunk's last
// kReconstructionOverlap ids follow.
inline constexpr std::string_view kRepeatFirst = "\n\nRepeat the previous context exactly.";
inline constexpr std::string_view kRepeatNext =
    "\n\nRepeat the part of the previous context exactly, starting with";
inline constexpr int kReconstructionOverlap = 8;

// One pass: the ids fed after the prompt, and the prompt span [begin, end)
// (positions) they reconstruct.
struct ReconstructionPass {
  std::vector<int32_t> ids;
  int64_t begin = 0, end = 0;
};

// The prompt's ids after its template head ([head, n)), cut every `chunk`
// ids; pass i is the repeat prompt (first_ids, or next_ids + the last
// kReconstructionOverlap ids of chunk i - 1), then suffix_ids (the chat
// template's text after a user turn: the assistant turn opened), then chunk
// i. No pass when the prompt is the head alone.
std::vector<ReconstructionPass> reconstruction_passes(std::span<const int32_t> prompt, int64_t head,
                                                      std::span<const int32_t> suffix_ids,
                                                      std::span<const int32_t> first_ids,
                                                      std::span<const int32_t> next_ids, int chunk);

// Wraps the cache a pass runs through and records, per layer and KV head,
// the largest restricted attention the pass pays each entry of the span it
// reconstructs. For query row t of the pass (every row: prompt, suffix and
// the teacher-forced ids) and query head q of KV head h, the softmax of
// q . k / sqrt(head_dim) runs over the key subset kvpress chooses,
//   K' = the first min(sinks, begin) prompt entries (the sinks)
//      + the span's own entries [begin, end)
//      + the pass's own entries up to row t (causal),
// not over the whole cache: it is renormalised over K'. An entry's score is
// the max over rows, over the G query heads of h and over the passes, of its
// column. Entries are told apart by position: those < n_prompt are the
// prompt's (position = token index), the others the pass's.
class ReconstructionRecorder final : public KvCache {
 public:
  // pool: threads for the softmax rows (null: the calling thread).
  ReconstructionRecorder(KvCache& inner, int64_t n_prompt, int sinks, ThreadPool* pool = nullptr);
  // The span the next pass reconstructs (positions [begin, end)).
  void set_span(int64_t begin, int64_t end);

  const KvShape& shape() const override { return inner_.shape(); }
  void begin_step(const StepInfo& info) override { inner_.begin_step(info); }
  void append(int layer, const float* k, const float* v) override { inner_.append(layer, k, v); }
  const KvHeadView& view(int layer, int kv_head) override { return inner_.view(layer, kv_head); }
  // The inner cache's request, with the step's queries always handed over.
  AttentionRequest attention_request(int layer) const override;
  void observe(const AttentionRows& rows) override { inner_.observe(rows); }
  bool observe_concurrently() const override { return inner_.observe_concurrently(); }
  // Records the step's rows, then forwards the queries if the inner cache wants them.
  void observe_queries(int layer, const float* q, std::span<const int32_t> positions) override;
  void end_step() override { inner_.end_step(); }
  int32_t position_for(int seq, int32_t stream_pos) const override {
    return inner_.position_for(seq, stream_pos);
  }

  // [n_layers * n_kv_heads][n_prompt]: each prompt entry's score (0 where no
  // pass reconstructed it: the template head, a sink).
  const std::vector<std::vector<float>>& tables() const { return tables_; }

 private:
  KvCache& inner_;
  int64_t n_prompt_;
  int sinks_;
  ThreadPool* pool_;
  int64_t begin_ = 0, end_ = 0;
  std::vector<std::vector<float>> tables_;
};

}  // namespace kvbench
