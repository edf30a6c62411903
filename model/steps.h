// The loops every caller runs over Evaluator::step, one copy each: chunked
// prefill, decoding (greedy or through a sampler), and next-token negative
// log-likelihood. Commands, the experiment runner, perplexity and
// calibration all call these, so they feed the model the same steps.
//
// Positions: callers give stream positions (token i of a prompt starting at
// 0 is at i); the cache maps each to the rotary position it wants
// (KvCache::position_for: itself, or the next contiguous position for a
// policy that renumbers its entries, StreamingLLM's position shift).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/common/span.h"
#include "model/evaluator.h"
#include "model/ops/kv_cache.h"
#include "model/sampler.h"  // argmax

namespace kvbench {

// [0, n) cut every `chunk` tokens (chunk >= 1).
std::vector<Span> fixed_chunks(int64_t n, int chunk);

struct PrefillOptions {
  size_t first = 0;   // chunks before this one are already in the cache
  int seq = 0;        // sequence id
  int32_t start = 0;  // stream position of tokens[0]
  // The last token's logits ([n_vocab]) after the last chunk, or null.
  float* last_logits = nullptr;
  // Called after each chunk i (the cache has maintained itself) with that
  // chunk's logits ([chunk size][n_vocab]) when all_logits, else null.
  bool all_logits = false;
  std::function<void(size_t i, const float* logits)> after_chunk;
};

// Feeds tokens[chunks[i]] for i in [first, chunks.size()) as prefill steps.
void prefill(Evaluator& eval, KvCache& cache, std::span<const int32_t> tokens,
             std::span<const Span> chunks, const PrefillOptions& options = {});

// -log p(target) from one row of logits ([n_vocab]): log-sum-exp in double
// around the row's maximum.
double next_token_nll(const float* row, int n_vocab, int32_t target);
// out[v] = log p(v) ([n_vocab]), the same arithmetic in float.
void log_softmax(const float* row, int n_vocab, float* out);

// Summed next-token NLL of a stream.
struct NllSum {
  double sum = 0.0;
  int64_t count = 0;
  double mean() const { return count ? sum / count : 0.0; }
};

// prefill() with every chunk's logits, adding to `acc` the NLL of each
// token i + 1 predicted by row i for skip <= i < tokens.size() - 1 (in order,
// so a running sum over several windows adds in the same order).
void prefill_nll(Evaluator& eval, KvCache& cache, std::span<const int32_t> tokens,
                 std::span<const Span> chunks, int64_t skip, NllSum& acc,
                 const std::function<void(size_t i)>& after_chunk = {});

struct DecodeOptions {
  int seq = 0;
  int32_t start = 0;        // stream position of the first generated token
  int max_new_tokens = 32;  // tokens returned at most
  int64_t n_ctx = 0;        // stop before a step at this stream position (0: no limit)
  // Picks the next token from logits ([n_vocab]); default: argmax.
  std::function<int32_t(const float* logits)> pick;
  std::function<void(int32_t token)> on_token;  // each token returned, as it comes
};

struct Decoded {
  std::vector<int32_t> tokens;  // without the end-of-generation token
  bool stopped_at_eog = false;
  bool hit_context = false;        // stopped because the next step would pass n_ctx
  int steps = 0;                   // decode steps run
  double first_token_seconds = 0;  // picking the first token
  double seconds = 0;              // the decode steps after it
};

// Generates from `logits` (the last prompt token's; on return the last
// step's): pick a token; stop at end-of-generation, at max_new_tokens, or
// before a step at n_ctx; else run it as a decode step and pick again.
Decoded decode(Evaluator& eval, KvCache& cache, std::vector<float>& logits,
               const DecodeOptions& options);

// One sequence of decode_batch: its cache (distinct from the others'), its
// logits (in: the last prompt token's, [n_vocab]; out: its last step's) and
// its options (seq, start, max_new_tokens, n_ctx, pick, on_token as decode's).
struct BatchSequence {
  KvCache* cache = nullptr;
  std::vector<float>* logits = nullptr;
  DecodeOptions options;
};

// decode() of every sequence at once: each round picks every unfinished
// sequence's next token by decode()'s rules, then runs one
// Evaluator::step_batch over those still going. Each sequence's tokens,
// stop reason, steps and final logits are exactly decode()'s for it alone.
// Timings: first_token_seconds is the sequence's own first pick; seconds is
// the batch's wall time from the first round to the last step the sequence
// took part in (its share of the batch is not separable).
std::vector<Decoded> decode_batch(Evaluator& eval, std::span<BatchSequence> sequences);

}  // namespace kvbench
