#include "policies/registry.h"

#include "policies/allocator.h"
#include "policies/scorer.h"

namespace kvbench {

// The scorers' factories, one per file in policies/scorers/: a new scorer is
// its file, the declaration here and its row below.
std::shared_ptr<const Scorer> make_full_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_window_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_streaming_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_h2o_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_hybrid_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_snapkv_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_tova_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_knorm_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_random_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_oracle_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_quest_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_expected_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_duo_scorer(const ComponentSpec& spec);
std::shared_ptr<const Scorer> make_cam_scorer(const ComponentSpec& spec);

namespace {

// Parameters most scorers share.
ParamInfo budget_param() {
  return {"budget", ParamType::Budget, "512",
          "entries kept per KV head: tokens (512) or a ratio of the context (0.2)"};
}
ParamInfo timing_param(std::string_view def) {
  return {"timing",
          ParamType::Choice,
          def,
          "when to evict: stream (after every chunk and step), once (after prefill), every (after "
          "prefill and every N decode steps), call (the seed's: after the prompt as one call, then "
          "after every decode step)",
          0,
          0,
          {"stream", "once", "every", "call"}};
}
ParamInfo every_param() {
  return {"every", ParamType::Int, "8", "decode steps between evictions with timing=every", 1, 1e6};
}
ParamInfo layers_param() {
  return {"layers",
          ParamType::Choice,
          "all",
          "layers compressed on a model with sliding-window layers (gemma3); a ratio budget on "
          "a local layer is a ratio of its window",
          0,
          0,
          {"all", "global", "local"}};
}
std::vector<ParamInfo> scorer_params(std::string_view timing, std::vector<ParamInfo> own = {}) {
  std::vector<ParamInfo> p{budget_param()};
  p.insert(p.end(), own.begin(), own.end());
  p.push_back(timing_param(timing));
  p.push_back(every_param());
  p.push_back(layers_param());
  return p;
}
ParamInfo group_param() {
  return {"group", ParamType::Int,
          "32",    "elements per quantization group (capped at head_dim, must divide it)",
          1,       4096};
}

std::vector<ComponentInfo> build() {
  std::vector<ComponentInfo> r;
  auto scorer = [&](std::string_view name, std::string_view summary, std::vector<ParamInfo> params,
                    ScorerFactory f) {
    ComponentInfo c{name, ComponentKind::Scorer, summary, std::move(params)};
    c.make_scorer = f;
    r.push_back(std::move(c));
  };
  scorer("full", "keeps every entry: the reference every policy is measured against", {},
         make_full_scorer);
  scorer("window", "sliding window: the most recent `budget` tokens", scorer_params("stream"),
         make_window_scorer);
  scorer("streaming", "StreamingLLM: the first `sinks` tokens (attention sinks) + the most recent",
         scorer_params("stream",
                       {{"sinks", ParamType::Int, "4", "attention-sink tokens always kept", 0, 1e6},
                        {"pos",
                         ParamType::Choice,
                         "original",
                         "positions: original, or contiguous inside the cache (keys re-rotated "
                         "after each eviction, as StreamingLLM)",
                         0,
                         0,
                         {"original", "contiguous"}}}),
         make_streaming_scorer);
  scorer("h2o",
         "Heavy-Hitter Oracle: attention accumulated over every query so far + the most recent "
         "tokens",
         scorer_params("stream", {{"recent", ParamType::Number, "0.5",
                                   "share of the budget kept for the most recent tokens", 0, 1}}),
         make_h2o_scorer);
  scorer("hybrid",
         "attention share (mean attention per query seen, which does not favour old tokens) + "
         "recency share",
         scorer_params("stream", {{"split", ParamType::Number, "0.7",
                                   "share of the budget chosen by attention; the rest is the most "
                                   "recent tokens",
                                   0, 1}}),
         make_hybrid_scorer);
  {
    ComponentInfo c{
        "snapkv",
        ComponentKind::Scorer,
        "SnapKV, once after prefill: the last `window` prompt queries' attention, "
        "pooled, picks the rest of the budget; the window itself is kept",
        {budget_param(),
         {"window", ParamType::Int, "32", "observation window (last prompt queries)", 1, 1e6},
         {"kernel", ParamType::Int, "7", "1-D pooling kernel over positions (odd)", 1, 1e3},
         {"pool", ParamType::Choice, "max", "pooling", 0, 0, {"max", "avg"}},
         layers_param()}};
    c.make_scorer = make_snapkv_scorer;
    r.push_back(std::move(c));
  }
  scorer(
      "expected",
      "expected attention (kvpress): the attention future queries, a Gaussian fitted to the "
      "prompt's queries and rotated to the next positions, are expected to pay, times the "
      "value norm; sinks kept",
      scorer_params("once",
                    {{"future", ParamType::Int, "512",
                      "future positions the query rotation is averaged over", 1, 1e6},
                     {"sinks", ParamType::Int, "4",
                      "first tokens always kept, their queries left out of the statistics", 0, 1e6},
                     {"window", ParamType::Int, "0",
                      "last prompt tokens always kept (kvpress compresses the context before the "
                      "question arrives; here the question is the prompt's tail)",
                      0, 1e6},
                     {"covariance",
                      ParamType::Choice,
                      "on",
                      "the queries' covariance term k^T S k / 2d",
                      0,
                      0,
                      {"on", "off"}},
                     {"vnorm",
                      ParamType::Choice,
                      "on",
                      "scores times the value's L2 norm",
                      0,
                      0,
                      {"on", "off"}}}),
      make_expected_scorer);
  {
    // DuoAttention's streaming heads keep 64 sinks + 256 recent tokens.
    std::vector<ParamInfo> p = scorer_params(
        "stream",
        {{"sinks", ParamType::Int, "64", "attention-sink tokens a streaming head keeps", 0, 1e6},
         {"heads", ParamType::Text, "none",
          "calibration file of \"layer kv_head score\" lines (kvbench heads writes one); none: "
          "every head streams"},
         {"retrieval", ParamType::Number, "0.5",
          "share of the file's heads, highest scores first, that keep everything", 0, 1}});
    p[0].default_value = "320";
    scorer("duo",
           "DuoAttention head types: retrieval heads keep every entry, streaming heads keep "
           "`sinks` + the most recent tokens (`budget` in all); which heads from a calibration "
           "file",
           std::move(p), make_duo_scorer);
  }
  {
    // CaM's experiments: start and recent 10% of the prompt each.
    std::vector<ParamInfo> p = scorer_params(
        "stream",
        {{"start", ParamType::Number, "0.5",
          "share of the budget held by the first tokens (the rest: the most recent)", 0, 1},
         {"span", ParamType::Int, "16",
          "kept tokens after an evicted one that share its value when it merges", 1, 1e6},
         {"merge",
          ParamType::Choice,
          "on",
          "off: the same eviction without merging (the control CaM is measured against)",
          0,
          0,
          {"on", "off"}},
         {"during",
          ParamType::Choice,
          "all",
          "which evictions merge: all, or only those of decode steps (the prompt's dropped plainly)",
          0,
          0,
          {"all", "decode"}}});
    p[0].default_value = "0.2";
    scorer("cam",
           "CaM cache merging: StreamingLLM eviction (first + recent tokens); an evicted token's "
           "value is spread over the next `span` kept values with probability its attention / "
           "theirs",
           std::move(p), make_cam_scorer);
  }
  scorer("tova",
         "TOVA: the current query's attention averaged over all heads; one token set per layer",
         scorer_params("stream"), make_tova_scorer);
  scorer("knorm", "keeps the keys of lowest L2 norm (Devoto et al.)", scorer_params("stream"),
         make_knorm_scorer);
  scorer("random", "seeded uniform random eviction (a control)",
         scorer_params("stream", {{"seed", ParamType::Int, "0",
                                   "random seed (0 = the cache context's seed)", 0, 9e15}}),
         make_random_scorer);
  scorer("oracle",
         "hindsight upper bound: keeps what the answer attends to in a full-cache run (importance "
         "supplied by the harness)",
         scorer_params("once"), make_oracle_scorer);
  scorer("quest",
         "Quest: nothing evicted; every token but the newest page is paged with per-channel key "
         "min/max and each step's queries attend the pages of highest bound within `budget`",
         {{"budget", ParamType::Budget, "0.25",
           "tokens attended per KV head besides the newest page: tokens (512) or a ratio of the "
           "context (0.25; of its window on a local layer)"},
          {"page", ParamType::Int, "16", "tokens per page", 1, 4096},
          {"dense", ParamType::Int, "2", "first layers kept whole (not paged)", 0, 1e6},
          {"timing",
           ParamType::Choice,
           "once",
           "when to page: once (after prefill, which attends in full, as in the paper) or stream "
           "(after every chunk and step)",
           0,
           0,
           {"once", "stream"}},
          layers_param()},
         make_quest_scorer);

  auto allocator = [&](std::string_view name, std::string_view summary,
                       std::vector<ParamInfo> params, AllocatorFactory f) {
    ComponentInfo c{name, ComponentKind::Allocator, summary, std::move(params)};
    c.make_allocator = f;
    r.push_back(std::move(c));
  };
  allocator("uniform", "every KV head keeps the budget", {}, make_uniform_allocator);
  allocator("pyramid",
            "PyramidKV: per-layer budgets decreasing linearly from bottom to top, same total",
            {{"beta", ParamType::Number, "20", "top layer keeps budget / beta", 1, 1e6}},
            make_pyramid_allocator);
  allocator(
      "adakv",
      "Ada-KV: a layer's budget goes to its heads' highest priorities, with a per-head floor",
      {{"floor", ParamType::Number, "0.2", "share of the budget every head keeps at least", 0, 1}},
      make_adakv_allocator);

  auto storage = [&](std::string_view name, std::string_view summary,
                     std::vector<ParamInfo> params) {
    r.push_back({name, ComponentKind::Storage, summary, std::move(params)});
  };
  storage("f32", "32-bit floats (exact)", {});
  storage("f16", "IEEE half precision", {});
  storage("bf16", "bfloat16", {});
  storage("int8", "8-bit symmetric, one f16 scale per group, quantized on the fly",
          {group_param()});
  storage("int4", "4-bit asymmetric, f16 (min, step) per group, two codes per byte",
          {group_param()});
  storage("kivi2",
          "KIVI 2-bit: keys per channel over groups of tokens, values per token; the most recent "
          "tokens in full precision",
          {group_param(),
           {"residual", ParamType::Int, "128",
            "full-precision residual window R (a multiple of the group)", 1, 1e6},
           {"keys", ParamType::Choice, "channel",
            "keys: per channel (KIVI), per token (int2 rows, as the values), or f32 (ablations)", 0,
            0, {"channel", "token", "f32"}},
           {"values", ParamType::Choice, "token",
            "values: per token (KIVI) or f32 (an ablation)", 0, 0, {"token", "f32"}}});
  storage("mixed",
          "precision by importance: the highest-priority entries in f32, the rest quantized",
          {{"full", ParamType::Number, "0.25", "share of kept entries held in f32", 0, 1},
           {"bits", ParamType::Choice, "4", "precision of the rest", 0, 0, {"4", "8"}},
           group_param()});

  auto extra = [&](std::string_view name, std::string_view summary, std::vector<ParamInfo> params) {
    r.push_back({name, ComponentKind::Extra, summary, std::move(params)});
  };
  extra(
      "offload",
      "evicted entries go to a cold tier, paged in position order with per-channel key min/max; "
      "at every step (prefill chunks included) the step's queries bound each page and the best "
      "pages are attended in that same step (restored bytes count as hot)",
      {{"page", ParamType::Int, "16", "tokens per cold page", 1, 4096},
       {"restore", ParamType::Budget, "64",
        "tokens per KV head restored from the cold tier at each step, on top of the eviction "
        "budget: tokens (64) or a ratio of the context (0.05; of its window on a local layer)"},
       {"tier",
        ParamType::Choice,
        "ram",
        "cold tier: ram, or an mmap'd file",
        0,
        0,
        {"ram", "file"}},
       {"dir", ParamType::Text, "/tmp", "directory of the cold-tier file (tier=file)"},
       {"every", ParamType::Int, "1", "decode steps between restores", 1, 1e6},
       {"capacity", ParamType::Int, "16384",
        "cold-tier capacity in tokens per KV head (the seed's offload_size); when full, the oldest "
        "pages are dropped",
        1, 1e9}});
  extra("merge",
        "evicted entries are folded into one summary entry per head (weighted mean of K and V; the "
        "seed's include_skipped)",
        {{"weight",
          ParamType::Choice,
          "attention",
          "weights of the mean: accumulated attention (when collected), or uniform",
          0,
          0,
          {"attention", "uniform"}}});
  return r;
}

}  // namespace

std::string_view kind_name(ComponentKind kind) {
  switch (kind) {
    case ComponentKind::Scorer:
      return "scorer";
    case ComponentKind::Allocator:
      return "allocator";
    case ComponentKind::Storage:
      return "storage";
    case ComponentKind::Extra:
      return "extra";
  }
  return "?";
}

const ParamInfo* ComponentInfo::param(std::string_view n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

std::string ComponentInfo::param_names() const {
  std::string s;
  for (const auto& p : params) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s.empty() ? "none" : s;
}

const std::vector<ComponentInfo>& registry() {
  static const std::vector<ComponentInfo> table = build();
  return table;
}

const ComponentInfo* find_component(std::string_view name) {
  for (const auto& c : registry())
    if (c.name == name) return &c;
  return nullptr;
}

std::string registry_names() {
  std::string out;
  for (ComponentKind k : {ComponentKind::Scorer, ComponentKind::Allocator, ComponentKind::Storage,
                          ComponentKind::Extra}) {
    std::string names;
    for (const auto& c : registry())
      if (c.kind == k) names += (names.empty() ? "" : ", ") + std::string(c.name);
    const std::string_view label = k == ComponentKind::Scorer      ? "scorers"
                                   : k == ComponentKind::Allocator ? "allocators"
                                   : k == ComponentKind::Storage   ? "storage"
                                                                   : "extras";
    out += (out.empty() ? "" : "; ") + std::string(label) + ": " + names;
  }
  return out;
}

}  // namespace kvbench
