// The cache interface: the only place where the model and the cache policies
// meet. The model owns no K/V storage (the caller owns the cache, as in
// gemma.cpp); per step it announces the tokens, hands over each layer's new
// K/V, attends over what the cache chooses to show for each KV head, reports
// attention probabilities only when the cache asks for them, and lets the
// cache maintain itself after the step.
//
// One forward step (a prefill chunk or one decode token) is:
//   begin_step(info)
//   for layer in 0..n_layers:
//     append(layer, k, v)                        // the step's new rows
//     observe_queries(...) only if attention_request(layer).queries
//     for kv_head: view(layer, kv_head)          // entries to attend over
//     observe(...)  only if attention_request(layer).wanted
//   end_step()                                   // policy maintenance
#pragma once

#include <cstdint>
#include <span>

namespace kvbench {

// Shape of the K/V the model writes; fixed for a cache's lifetime.
struct KvShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int n_q_heads = 0;  // query heads; n_q_heads / n_kv_heads share one KV head (GQA)
  int head_dim = 0;
};

enum class StepPhase { Prefill, Decode };

struct StepInfo {
  int seq = 0;  // sequence the tokens belong to
  StepPhase phase = StepPhase::Prefill;
  std::span<const int32_t> positions;  // [n_tokens] rotary positions of the new tokens
  std::span<const int32_t> tokens;     // [n_tokens] token ids (policies may use them)
};

// Element type of K/V rows a cache exposes in its own storage (see pieces()).
// Q8 / Q4 rows have the layout of policies/codec.h's int8 / int4 codecs: the
// head_dim codes first, then the per-group parameters (f16 halves):
//   Q8  [head_dim] int8 codes, then [head_dim / group] f16 scales;
//       element = code * scale
//   Q4  [head_dim / 2] bytes (element 2i in the low nibble of byte i, 2i + 1
//       in the high one), then [head_dim / group] pairs of f16 (min, step);
//       element = min + code * step
//   Q2  int2 (KIVI's values): [head_dim / 4] bytes (element e in bits
//       2 * (e % 4) of byte e / 4), then [head_dim / group] pairs of f16
//       (min, step); element = min + code * step
//   K2  KIVI's keys: [head_dim / 4] bytes of 2-bit codes as Q2, and per row
//       a pointer (KvRawRows::params) to its token block's [2][head_dim] f16:
//       a min per channel, then a step per channel; element c = min[c] +
//       code * step[c]. Only as keys (a KIVI piece's values are Q2 or F32).
// Attention dequantizes in registers with exactly these operations (a
// multiply, then an add), so it reads the same values the codec decodes.
enum class KvElement : uint8_t {
  F32,   // float
  F16,   // IEEE binary16, as uint16_t bits
  BF16,  // bfloat16, as uint16_t bits
  Q8,
  Q4,
  Q2,
  K2,
};

// Bytes of one row's codes and parameters.
constexpr int64_t kv_row_bytes(KvElement e, int head_dim, int group) {
  switch (e) {
    case KvElement::F32:
      return int64_t{head_dim} * 4;
    case KvElement::F16:
    case KvElement::BF16:
      return int64_t{head_dim} * 2;
    case KvElement::Q8:
      return head_dim + int64_t{head_dim / group} * 2;
    case KvElement::Q4:
      return head_dim / 2 + int64_t{head_dim / group} * 4;
    case KvElement::Q2:
      return head_dim / 4 + int64_t{head_dim / group} * 4;
    case KvElement::K2:
      return head_dim / 4;
  }
  return 0;
}

// Rows of K (or V) in the cache's own storage. Row j (j < the piece's count)
// is row i = index[j] when index is set (some rows of an array), else i = j,
// and row i starts at
//   ptrs[i]                      when ptrs is set (rows scattered, e.g. pages),
//   data + i * row_stride        otherwise.
struct KvRawRows {
  KvElement type = KvElement::F32;
  const void* data = nullptr;
  int64_t row_stride = 0;  // bytes between consecutive rows
  int group = 0;           // Q8 / Q4 / Q2: elements per parameter group
  const int32_t* index = nullptr;
  const uint8_t* const* ptrs = nullptr;
  const uint16_t* const* params =
      nullptr;  // K2: row j's block parameters, at params[j] or params[index[j]]
};

// A run of a head's view held in place: view entries [offset, offset + count)
// are rows [0, count) of k and v. K and V share one element type, except in
// KIVI's pieces (K2 or F32 keys with Q2 or F32 values).
struct KvPiece {
  int32_t offset = 0;
  int32_t count = 0;
  KvRawRows k, v;
  // [count] positions of the piece's rows (row j at pos[j]), so attention
  // need not ask for the concatenated positions(); null: positions() + offset.
  const int32_t* pos = nullptr;
};

// The entries one KV head attends over for the current step's sequence,
// in cache order. Valid until the next call on the cache. The arrays it
// points to (positions(), pieces() and the rows they describe, rows
// keys()/values() return from the cache's storage) must stay valid until the
// cache next changes (append, end_step, ...): attention fetches the views of
// all KV heads of a layer, keeping those pointers, before it reads any of them.
class KvHeadView {
 public:
  virtual ~KvHeadView() = default;
  virtual int32_t size() const = 0;
  // [size()] rotary positions; causal masking compares these with the query's.
  virtual const int32_t* positions() const = 0;
  // K (or V) rows [begin, begin + count) as f32, [count][head_dim] row-major.
  // Returns a pointer into the cache's storage when it holds f32 rows, else
  // decodes into `scratch` (count * head_dim floats, caller-owned) and returns it.
  // The generic accessor: every cache implements it, whatever its storage.
  virtual const float* keys(int32_t begin, int32_t count, float* scratch) const = 0;
  virtual const float* values(int32_t begin, int32_t count, float* scratch) const = 0;
  // The fast path: a cache whose storage attention can read in place
  // describes the whole view as pieces covering [0, size()) in order, and
  // attention reads (and converts or dequantizes in registers) straight from
  // there: no copy of K/V. Empty (the default) when any part of the view is
  // held otherwise; attention then decodes it through keys()/values().
  virtual std::span<const KvPiece> pieces() const { return {}; }
};

// What a policy wants to see of a layer's attention during the current step.
struct AttentionRequest {
  bool wanted = false;
  int32_t last_queries = -1;  // only the step's last N query tokens; -1 = all
  // The step's rotated queries, handed over by observe_queries() before the
  // layer's views are fetched (SnapKV's observation window, Quest-style
  // restore of offloaded pages). Zero cost when false.
  bool queries = false;
};

// Attention probabilities of one query token: one row of n per query head of
// the KV head's group (row g at probs + g * head_stride), over that KV head's
// view in view order.
struct AttentionRows {
  int layer = 0;
  int kv_head = 0;
  int32_t query_index = 0;  // index of the query token within the step
  int32_t query_pos = 0;    // its rotary position
  int group = 0;            // query heads per KV head
  int32_t n = 0;            // view size
  const float* probs = nullptr;
  int64_t head_stride = 0;
  // Optional [n]: the sum over the group's heads of probs (key j's total
  // weight), computed in parallel with them; null when not provided.
  const float* group_sum = nullptr;
  // The keys this call reports: [begin, end) of [0, n) (end -1: n). One call
  // per head covers them all, except for a cache that observes concurrently
  // (KvCache::observe_concurrently), which gets disjoint ranges: then only
  // the probs and group_sum entries of [begin, end) are final (other threads
  // may still be writing the rest).
  int32_t begin = 0, end = -1;
  int32_t range_end() const { return end < 0 ? n : end; }
};

class KvCache {
 public:
  virtual ~KvCache() = default;
  virtual const KvShape& shape() const = 0;

  virtual void begin_step(const StepInfo& info) = 0;
  // New rows of the step: k, v are [n_tokens][n_kv_heads][head_dim], keys
  // already rotated (RoPE) at the step's positions.
  virtual void append(int layer, const float* k, const float* v) = 0;
  virtual const KvHeadView& view(int layer, int kv_head) = 0;
  // Zero cost unless asked: the model computes and reports probabilities only
  // for layers where this says wanted.
  virtual AttentionRequest attention_request(int layer) const { return {}; }
  virtual void observe(const AttentionRows& rows) {}
  // True: in decode, observe() may run on several threads at once, for
  // different KV heads or disjoint key ranges of one head (group_sum always
  // given), from inside attention's parallel region. False (the default):
  // one call per KV head, in head order, on the calling thread.
  virtual bool observe_concurrently() const { return false; }
  // Only if attention_request(layer).queries: q is [n_tokens][n_q_heads][head_dim]
  // (rotated at `positions`), called after append() and before view() of the layer.
  virtual void observe_queries(int layer, const float* q, std::span<const int32_t> positions) {}
  virtual void end_step() = 0;
  // The rotary position for `seq`'s next token, whose position in the stream
  // is stream_pos: stream_pos itself, unless the cache renumbers its entries
  // contiguously (StreamingLLM's position shift). model/steps.h asks it.
  virtual int32_t position_for(int seq, int32_t stream_pos) const { return stream_pos; }
};

}  // namespace kvbench
