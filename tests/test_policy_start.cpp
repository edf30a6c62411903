// Sharing the full cache's prefill changes no number, for every spec the
// registry can build: each spec's cell state reached the way the runner
// shares work (plan_start: branch or resume from the shared full prefill) is
// compared with the same spec prefilling alone (what `kvbench run
// --no-share` does): last prompt logits, then logits of decode steps, bit for
// bit, and every entry of every tier (position, stream index, sequences,
// precision) plus the memory report; with f32 and with bf16 prefill attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "harness/inference.h"
#include "harness/run/policy_start.h"
#include "model/llama_model.h"
#include "policies/registry.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

// Every scorer with each value of each of its choice parameters (one at a
// time; `every` made small enough to act in a few decode steps), at a token
// budget and at a ratio budget that both evict within the prompt, times every
// allocator, times the extras alone and together with their choices.
std::vector<std::string> sharable_specs(const std::string& tokens, const std::string& ratio) {
  std::vector<std::string> scorers;
  for (const auto& c : registry()) {
    if (c.kind != ComponentKind::Scorer) continue;
    const std::string name(c.name);
    if (!c.param("budget")) {
      scorers.push_back(name);
      continue;
    }
    for (const std::string& b : {tokens, ratio}) {
      // A window (SnapKV's) must fit in the budget.
      const std::string base = name + ":budget=" + b + (c.param("window") ? ",window=8" : "");
      scorers.push_back(base);
      for (const auto& p : c.params) {
        if (p.type != ParamType::Choice) continue;
        for (const auto& choice : p.choices) {
          if (choice == p.default_value) continue;
          std::string v = base + "," + std::string(p.name) + "=" + std::string(choice);
          if (p.name == "timing" && choice == "every") v += ",every=2";
          scorers.push_back(v);
        }
      }
    }
  }
  std::vector<std::string> allocators, extras{""};
  for (const auto& c : registry()) {
    if (c.kind == ComponentKind::Allocator)
      allocators.push_back(c.name == "uniform" ? "" : "+" + std::string(c.name));
    if (c.kind != ComponentKind::Extra) continue;
    const std::string name(c.name);
    extras.push_back("+" + name);
    for (const auto& p : c.params)
      if (p.type == ParamType::Choice)
        for (const auto& choice : p.choices)
          if (choice != p.default_value)
            extras.push_back("+" + name + ":" + std::string(p.name) + "=" + std::string(choice));
  }
  extras.push_back("+offload:every=2");
  extras.push_back("+offload:restore=8");
  extras.push_back("+offload+merge");
  std::vector<std::string> out;
  for (const auto& s : scorers)
    for (const auto& a : allocators)
      for (const auto& e : extras) out.push_back(s + a + e);
  return out;
}

struct Outcome {
  std::vector<std::vector<float>> logits;       // after the prompt, then after each decode step
  std::vector<std::vector<EntryInfo>> entries;  // [layer * kv_heads] after the prompt
  MemoryReport memory;
};

bool same_entries(const std::vector<EntryInfo>& a, const std::vector<EntryInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].pos != b[i].pos || a[i].src != b[i].src || a[i].seqs != b[i].seqs ||
        a[i].cold != b[i].cold || a[i].precision != b[i].precision)
      return false;
  return true;
}

class PolicyStart : public testing::Test {
 protected:
  void SetUp() override { load(test::tiny_model_path()); }
  void load(const std::string& path) {
    model_ = LlamaModel::load(path);
    eval_ = std::make_unique<Evaluator>(*model_, 2);
    tokens_ = test::some_tokens(75, model_->config().n_vocab, 11);
    // Chunks of 16 and the last step of its own, like a question.
    for (int64_t b = 0; b < 70; b += 16) chunks_.push_back({b, std::min<int64_t>(70, b + 16)});
    chunks_.push_back({70, 75});
    // As the runner makes it (Gemma 3: each local layer's window, its RoPE).
    ctx_ = cache_context(*model_, static_cast<int64_t>(tokens_.size()), 5);
  }
  void check_every_spec();

  // The oracle's importance: any fixed table will do.
  void set_oracle(PolicyCache& c) const {
    if (c.spec().scorer.name != "oracle") return;
    for (int l = 0; l < ctx_.shape.n_layers; ++l)
      for (int h = 0; h < ctx_.shape.n_kv_heads; ++h) {
        std::vector<float> imp(tokens_.size());
        for (size_t i = 0; i < imp.size(); ++i)
          imp[i] = static_cast<float>((i * 7919 + l * 31 + h * 17) % 101);
        c.set_importance(l, h, imp);
      }
  }

  Outcome outcome(const PolicySpec& spec, const StartPlan& plan, const SharedPrefill& shared,
                  PriorityMemo* memo = nullptr) {
    StartedCache s = start_policy(
        spec, ctx_, plan, shared, *eval_, tokens_, chunks_, [&](PolicyCache& c) { set_oracle(c); },
        nullptr, memo);
    Outcome o;
    for (int l = 0; l < ctx_.shape.n_layers; ++l)
      for (int h = 0; h < ctx_.shape.n_kv_heads; ++h)
        o.entries.push_back(s.cache->store().entries(l, h));
    o.memory = s.cache->memory();
    o.logits.push_back(s.logits);
    std::vector<float> logits = s.logits;
    int32_t pos = static_cast<int32_t>(tokens_.size());
    for (int i = 0; i < 5; ++i) {
      const int32_t t[1] = {
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())};
      const int32_t p[1] = {s.cache->position_for(0, pos++)};
      eval_->step(t, p, 0, StepPhase::Decode, *s.cache, Logits::Last, logits.data());
      o.logits.push_back(logits);
    }
    return o;
  }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Evaluator> eval_;
  std::vector<int32_t> tokens_;
  std::vector<Span> chunks_;
  CacheContext ctx_;
};

// The same on Gemma 3's shape: local layers keep their window (5 tokens in
// the tiny file) on both paths, keys re-rotate in halves, and `layers=`
// targets one kind of layer.
class PolicyStartGemma3 : public PolicyStart {
 protected:
  void SetUp() override { load(test::tiny_gemma3_path()); }
};

// And on Qwen2's (Q/K/V biases) and Qwen3's (QK-norms) blocks, both with
// RoPE halves: what a policy scores and keeps is what the block computed.
class PolicyStartQwen2 : public PolicyStart {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Qwen2)); }
};
class PolicyStartQwen3 : public PolicyStart {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Qwen3)); }
};
// Phi-3's: fused tensors taken apart, LongRoPE's factors and attention
// factor in the keys the policies score.
class PolicyStartPhi3 : public PolicyStart {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Phi3)); }
};
// Gemma 2's: soft-capped attention in the probabilities the scorers observe,
// every other layer local.
class PolicyStartGemma2 : public PolicyStart {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Gemma2)); }
};

TEST_F(PolicyStart, SharingEqualsPrefillingAloneForEverySpecTheRegistryBuilds) {
  check_every_spec();
}
TEST_F(PolicyStartQwen2, SharingEqualsPrefillingAloneForEverySpecTheRegistryBuilds) {
  check_every_spec();
}
TEST_F(PolicyStartQwen3, SharingEqualsPrefillingAloneForEverySpecTheRegistryBuilds) {
  check_every_spec();
}
TEST_F(PolicyStartPhi3, SharingEqualsPrefillingAloneForEverySpecTheRegistryBuilds) {
  check_every_spec();
}
TEST_F(PolicyStartGemma2, SharingEqualsPrefillingAloneForEverySpecTheRegistryBuilds) {
  check_every_spec();
}
TEST_F(PolicyStartGemma3, SharingEqualsPrefillingAloneForEverySpecTheRegistryBuilds) {
  check_every_spec();
}
// The same with bf16 prefill attention (decoding.attention = "bf16"): its
// rounding must not make a shared start differ either.
TEST_F(PolicyStart, SharingEqualsPrefillingAloneWithBf16Attention) {
  eval_->set_bf16_attention(true);
  check_every_spec();
}
TEST_F(PolicyStartGemma3, SharingEqualsPrefillingAloneWithBf16Attention) {
  eval_->set_bf16_attention(true);
  check_every_spec();
}

void PolicyStart::check_every_spec() {
  // Parse and plan every spec. The registry refuses a few compositions
  // (alike on both paths): any the components' own rules refuse when the
  // spec is parsed (ComponentInfo::check), and, when a cache is made, only
  // these, for their documented reasons.
  std::vector<std::string> reasons{
      "decides per head which keep everything; use an allocator that does not move budget",
      "merges values into kept entries in place, which KIVI's blocks cannot hold"};
  if (ctx_.layer_window.empty())
    reasons.push_back("needs a model with sliding-window layers (gemma3); this one has none");
  std::vector<PolicySpec> specs;
  std::vector<StartPlan> plans;
  std::set<std::string> scorers;
  for (const std::string& text : sharable_specs("24", "0.3")) {
    PolicySpec spec;
    try {
      spec = parse_policy_spec(text);
    } catch (const InputError&) {
      continue;  // a rule of the registry's: no cache is made on either path
    }
    try {
      plans.push_back(plan_start(spec, ctx_, chunks_, true));
      scorers.insert(spec.scorer.name);
      specs.push_back(std::move(spec));
    } catch (const InputError& e) {
      const std::string why = e.what();
      EXPECT_TRUE(
          std::any_of(reasons.begin(), reasons.end(),
                      [&](const std::string& r) { return why.find(r) != std::string::npos; }))
          << text << ": " << why;
    }
  }
  ASSERT_GT(specs.size(), 1000u);
  for (const auto& c : registry())
    if (c.kind == ComponentKind::Scorer)
      EXPECT_TRUE(scorers.count(std::string(c.name))) << c.name << " never built";

  // One shared prefill for all, as the runner makes per instance.
  std::vector<const PolicySpec*> importers;
  std::vector<size_t> kept;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (plans[i].start == Start::Scratch) continue;
    importers.push_back(&specs[i]);
    if (plans[i].start == Start::Resume) kept.push_back(plans[i].resume_after_chunk);
  }
  const SharedPrefill shared =
      run_shared_prefill(*eval_, shared_full_context(ctx_, importers), tokens_, chunks_, kept);

  const int nv = model_->config().n_vocab;
  std::set<Start> seen;
  for (size_t i = 0; i < specs.size(); ++i) {
    SCOPED_TRACE(to_string(specs[i]));
    seen.insert(plans[i].start);
    if (plans[i].start == Start::Scratch) continue;  // the no-share path itself
    const Outcome want = outcome(specs[i], StartPlan{}, shared);
    const Outcome got = outcome(specs[i], plans[i], shared);
    const std::string start =
        plans[i].start == Start::Branch
            ? "branch"
            : "resume after chunk " + std::to_string(plans[i].resume_after_chunk);
    for (size_t s = 0; s < want.logits.size(); ++s)
      if (std::memcmp(got.logits[s].data(), want.logits[s].data(), sizeof(float) * nv) != 0) {
        ADD_FAILURE() << "logits differ at step " << s << " (max diff "
                      << test::max_abs_diff(got.logits[s].data(), want.logits[s].data(), nv)
                      << "), " << start;
        break;
      }
    for (size_t h = 0; h < want.entries.size(); ++h)
      if (!same_entries(got.entries[h], want.entries[h])) {
        ADD_FAILURE() << "entries of head " << h << " differ, " << start;
        break;
      }
    EXPECT_EQ(got.memory.hot, want.memory.hot);
    EXPECT_EQ(got.memory.cold, want.memory.cold);
  }
  // The grid exercises both ways to share (Scratch: QuantizedStorageAlwaysPrefillsItself).
  EXPECT_TRUE(seen.count(Start::Branch) && seen.count(Start::Resume));

  // The budgets of a family share one scoring (policies/priority_memo.h):
  // each branch, started with a memo that another budget of its family
  // filled first, equals the same branch started alone.
  int64_t reused = 0, norms = 0;
  std::set<std::string> reusing;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (plans[i].start != Start::Branch) continue;
    SCOPED_TRACE(to_string(specs[i]));
    PolicySpec twin = specs[i];
    for (auto& [name, value] : twin.scorer.params)
      if (name == "budget") value = value == "24" ? "40" : "0.6";
    if (twin == specs[i]) continue;  // no budget
    StartPlan twin_plan;
    try {
      twin_plan = plan_start(twin, ctx_, chunks_, true);
    } catch (const InputError&) {
      continue;
    }
    if (twin_plan.start != Start::Branch) continue;
    PriorityMemo memo;
    outcome(twin, twin_plan, shared, &memo);
    const int64_t before = memo.reused();
    const Outcome got = outcome(specs[i], plans[i], shared, &memo);
    if (memo.reused() > before) reusing.insert(specs[i].scorer.name);
    reused += memo.reused() - before;
    norms += memo.reused(MemoKind::CriticalNorms);
    const Outcome want = outcome(specs[i], StartPlan{}, shared);
    for (size_t s = 0; s < want.logits.size(); ++s)
      if (std::memcmp(got.logits[s].data(), want.logits[s].data(), sizeof(float) * nv) != 0) {
        ADD_FAILURE() << "with the memo, logits differ at step " << s;
        break;
      }
    for (size_t h = 0; h < want.entries.size(); ++h)
      if (!same_entries(got.entries[h], want.entries[h])) {
        ADD_FAILURE() << "with the memo, entries of head " << h << " differ";
        break;
      }
    EXPECT_EQ(got.memory.hot, want.memory.hot);
  }
  // The memo was used, by the scorers the leaderboard's nested ratios have.
  EXPECT_GT(reused, 0);
  EXPECT_GT(norms, 0);  // CriticalKV's value norms through o_proj
  for (const char* name : {"snapkv", "expected", "knorm", "keydiff", "lagkv", "tova"})
    EXPECT_TRUE(reusing.count(name)) << name << " never reused a scoring";
}

TEST_F(PolicyStart, QuantizedStorageAlwaysPrefillsItself) {
  for (const auto& c : registry()) {
    if (c.kind != ComponentKind::Storage || c.name == "f32") continue;
    for (const std::string base : {"full", "h2o:budget=24", "window:budget=24,timing=once"}) {
      const std::string text = base + "+" + std::string(c.name);
      SCOPED_TRACE(text);
      EXPECT_EQ(plan_start(parse_policy_spec(text), ctx_, chunks_, true).start, Start::Scratch);
    }
  }
}

// The bug this file was written for: offload's restored pages and merge's
// summary were counted as room before the first eviction, so the shared
// path joined a chunk too late.
TEST_F(PolicyStart, StreamingOffloadJoinsAtItsEvictionBudgetNotItsHotBudget) {
  const PolicySpec spec = parse_policy_spec("window:budget=24+offload:restore=16+merge");
  const auto cache = PolicyCache::create(spec, ctx_);
  EXPECT_EQ(cache->first_eviction_tokens(), 23);  // 24 less the summary entry
  EXPECT_EQ(cache->layer_budget(0), 23 + 16 + 1);
  const StartPlan plan = plan_start(spec, ctx_, chunks_, true);
  EXPECT_EQ(plan.start, Start::Resume);
  EXPECT_EQ(plan.resume_after_chunk, 1u);  // after tokens [16, 32): 32 > 23
}

// The shared full cache collects one skip of query statistics: expected
// attention with another `sinks` than the first such plan's prefills itself,
// and the one that branches holds what it would alone.
TEST_F(PolicyStart, QueryStatisticsOfOneSkipAreSharedTheOtherPrefillsItself) {
  const PolicySpec a = parse_policy_spec("expected:budget=24,sinks=4");
  const PolicySpec b = parse_policy_spec("expected:budget=24,sinks=2");
  const PolicySpec c = parse_policy_spec("expected:budget=0.3,sinks=4");
  const std::vector<const PolicySpec*> specs{&a, &b, &c};
  std::vector<StartPlan> plans;
  for (const PolicySpec* s : specs) plans.push_back(plan_start(*s, ctx_, chunks_, true));
  settle_query_stats(specs, plans);
  EXPECT_EQ(plans[0].start, Start::Branch);
  EXPECT_EQ(plans[1].start, Start::Scratch);
  EXPECT_EQ(plans[2].start, Start::Branch);
  const std::vector<const PolicySpec*> importers{&a, &c};
  const CacheContext full_ctx = shared_full_context(ctx_, importers);
  EXPECT_EQ(full_ctx.query_stats_skip, 4);
  const SharedPrefill shared = run_shared_prefill(*eval_, full_ctx, tokens_, chunks_, {});
  for (const PolicySpec* s : importers) {
    const Outcome want = outcome(*s, StartPlan{}, shared);
    const Outcome got = outcome(*s, plans[0], shared);
    for (size_t i = 0; i < want.logits.size(); ++i) EXPECT_EQ(got.logits[i], want.logits[i]);
    for (size_t h = 0; h < want.entries.size(); ++h)
      EXPECT_TRUE(same_entries(got.entries[h], want.entries[h])) << h;
  }
  // A full cache made without them cannot stand in.
  const SharedPrefill bare = run_shared_prefill(*eval_, ctx_, tokens_, chunks_, {});
  EXPECT_THROW(outcome(a, plans[0], bare), InputError);
}

// KVzip's reconstruction pass reads the prompt the branch holds, which is
// the full cache's for every budget and allocator: one pass serves every
// ratio, and each cache equals prefilling alone with its own pass.
TEST_F(PolicyStart, OneReconstructionPassServesEveryBudgetOfABranch) {
  const std::vector<std::string> texts{"kvzip:budget=24", "kvzip:budget=0.3",
                                       "kvzip:budget=0.3+global", "kvzip:budget=24,chunk=16"};
  std::vector<PolicySpec> specs;
  std::vector<const PolicySpec*> importers;
  for (const auto& t : texts) specs.push_back(parse_policy_spec(t));
  for (const auto& s : specs) importers.push_back(&s);
  const SharedPrefill shared =
      run_shared_prefill(*eval_, shared_full_context(ctx_, importers), tokens_, chunks_, {});
  ReconstructionMemo memo;
  for (const auto& spec : specs) {
    SCOPED_TRACE(to_string(spec));
    const StartPlan plan = plan_start(spec, ctx_, chunks_, true);
    ASSERT_EQ(plan.start, Start::Branch);
    StartedCache got = start_policy(spec, ctx_, plan, shared, *eval_, tokens_, chunks_, {}, &memo);
    const Outcome want = outcome(spec, StartPlan{}, shared);
    for (int l = 0; l < ctx_.shape.n_layers; ++l)
      for (int h = 0; h < ctx_.shape.n_kv_heads; ++h)
        EXPECT_TRUE(same_entries(got.cache->store().entries(l, h),
                                 want.entries[static_cast<size_t>(l) * ctx_.shape.n_kv_heads + h]))
            << l << "/" << h;
  }
  EXPECT_EQ(memo.passes, 2);  // chunk=16 reads the prompt another way
}

}  // namespace
}  // namespace kvbench
