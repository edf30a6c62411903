#include "model/steps.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/common/error.h"

namespace kvbench {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

std::vector<Span> fixed_chunks(int64_t n, int chunk) {
  if (chunk < 1) throw InputError("chunk must be >= 1");
  std::vector<Span> out;
  for (int64_t b = 0; b < n; b += chunk) out.push_back({b, std::min<int64_t>(n, b + chunk)});
  return out;
}

void prefill(Evaluator& eval, KvCache& cache, std::span<const int32_t> tokens,
             std::span<const Span> chunks, const PrefillOptions& o) {
  const int n_vocab = eval.model().config().n_vocab;
  std::vector<int32_t> pos;
  std::vector<float> all;
  for (size_t i = o.first; i < chunks.size(); ++i) {
    const Span s = chunks[i];
    pos.resize(s.size());
    const int32_t p0 = cache.position_for(o.seq, o.start + static_cast<int32_t>(s.begin));
    for (int64_t t = 0; t < s.size(); ++t) pos[t] = p0 + static_cast<int32_t>(t);
    const bool last = i + 1 == chunks.size();
    if (o.all_logits) {
      all.resize(static_cast<size_t>(s.size()) * n_vocab);
      eval.step(tokens.subspan(s.begin, s.size()), pos, o.seq, StepPhase::Prefill, cache,
                Logits::All, all.data());
      if (last && o.last_logits)
        std::copy_n(all.data() + (s.size() - 1) * n_vocab, n_vocab, o.last_logits);
    } else {
      const bool want = last && o.last_logits;
      eval.step(tokens.subspan(s.begin, s.size()), pos, o.seq, StepPhase::Prefill, cache,
                want ? Logits::Last : Logits::None, want ? o.last_logits : nullptr);
    }
    if (o.after_chunk) o.after_chunk(i, o.all_logits ? all.data() : nullptr);
  }
}

double next_token_nll(const float* row, int n_vocab, int32_t target) {
  const float max = *std::max_element(row, row + n_vocab);
  double z = 0.0;
  for (int v = 0; v < n_vocab; ++v) z += std::exp(static_cast<double>(row[v]) - max);
  return (max + std::log(z)) - row[target];
}

void log_softmax(const float* row, int n_vocab, float* out) {
  const float max = *std::max_element(row, row + n_vocab);
  double sum = 0.0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
  const double log_z = max + std::log(sum);
  for (int i = 0; i < n_vocab; ++i) out[i] = static_cast<float>(row[i] - log_z);
}

void prefill_nll(Evaluator& eval, KvCache& cache, std::span<const int32_t> tokens,
                 std::span<const Span> chunks, int64_t skip, NllSum& acc,
                 const std::function<void(size_t i)>& after_chunk) {
  const int n_vocab = eval.model().config().n_vocab;
  const int64_t n = static_cast<int64_t>(tokens.size());
  PrefillOptions o;
  o.all_logits = true;
  o.after_chunk = [&](size_t i, const float* logits) {
    const Span s = chunks[i];
    // Row i predicts token i + 1.
    for (int64_t t = std::max(s.begin, skip); t < s.end && t + 1 < n; ++t) {
      acc.sum += next_token_nll(logits + (t - s.begin) * n_vocab, n_vocab, tokens[t + 1]);
      ++acc.count;
    }
    if (after_chunk) after_chunk(i);
  };
  prefill(eval, cache, tokens, chunks, o);
}

Decoded decode(Evaluator& eval, KvCache& cache, std::vector<float>& logits,
               const DecodeOptions& o) {
  Decoded d;
  if (o.max_new_tokens <= 0) return d;
  const int n_vocab = eval.model().config().n_vocab;
  const Tokenizer& tok = eval.model().tokenizer();
  auto pick = [&] { return o.pick ? o.pick(logits.data()) : argmax(logits.data(), n_vocab); };
  const auto t0 = Clock::now();
  int32_t next = pick();
  d.first_token_seconds = since(t0);
  const auto t1 = Clock::now();
  int32_t stream_pos = o.start;
  for (;;) {
    if (tok.is_end_of_generation(next)) {
      d.stopped_at_eog = true;
      break;
    }
    d.tokens.push_back(next);
    if (o.on_token) o.on_token(next);
    if (static_cast<int>(d.tokens.size()) >= o.max_new_tokens) break;
    if (o.n_ctx > 0 && stream_pos >= o.n_ctx) {
      d.hit_context = true;
      break;
    }
    const int32_t t[1] = {next}, p[1] = {cache.position_for(o.seq, stream_pos++)};
    eval.step(t, p, o.seq, StepPhase::Decode, cache, Logits::Last, logits.data());
    ++d.steps;
    next = pick();
  }
  d.seconds = since(t1);
  return d;
}

std::vector<Decoded> decode_batch(Evaluator& eval, std::span<BatchSequence> sequences) {
  const size_t n = sequences.size();
  std::vector<Decoded> out(n);
  const int n_vocab = eval.model().config().n_vocab;
  const Tokenizer& tok = eval.model().tokenizer();
  auto pick = [&](const BatchSequence& s) {
    return s.options.pick ? s.options.pick(s.logits->data()) : argmax(s.logits->data(), n_vocab);
  };
  // A sequence's state between rounds: its next token and stream position,
  // whether it still steps.
  std::vector<int32_t> next(n), stream_pos(n);
  std::vector<char> going(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (sequences[i].options.max_new_tokens <= 0) continue;
    const auto t0 = Clock::now();
    next[i] = pick(sequences[i]);
    out[i].first_token_seconds = since(t0);
    stream_pos[i] = sequences[i].options.start;
    going[i] = 1;
  }
  const auto t1 = Clock::now();
  std::vector<BatchToken> rows;
  std::vector<size_t> who;  // rows[r] is sequence who[r]
  std::vector<float> logits;
  for (;;) {
    rows.clear();
    who.clear();
    // decode()'s loop body up to its step, for each sequence still going.
    for (size_t i = 0; i < n; ++i) {
      if (!going[i]) continue;
      const DecodeOptions& o = sequences[i].options;
      Decoded& d = out[i];
      going[i] = 0;
      d.seconds = since(t1);
      if (tok.is_end_of_generation(next[i])) {
        d.stopped_at_eog = true;
        continue;
      }
      d.tokens.push_back(next[i]);
      if (o.on_token) o.on_token(next[i]);
      if (static_cast<int>(d.tokens.size()) >= o.max_new_tokens) continue;
      if (o.n_ctx > 0 && stream_pos[i] >= o.n_ctx) {
        d.hit_context = true;
        continue;
      }
      going[i] = 1;
      KvCache* cache = sequences[i].cache;
      rows.push_back({next[i], cache->position_for(o.seq, stream_pos[i]++), o.seq, cache});
      who.push_back(i);
    }
    if (rows.empty()) break;
    logits.resize(rows.size() * static_cast<size_t>(n_vocab));
    eval.step_batch(rows, logits.data());
    for (size_t r = 0; r < rows.size(); ++r) {
      BatchSequence& s = sequences[who[r]];
      std::copy_n(logits.data() + r * n_vocab, n_vocab, s.logits->data());
      ++out[who[r]].steps;
      next[who[r]] = pick(s);
    }
  }
  return out;
}

}  // namespace kvbench
