// Batched decoding changes no number: for every spec the registry builds
// (one per component, and the compositions that change how a cache steps),
// and the full cache in f32 and f16, three sequences with prompts of
// different lengths and different generation limits decode together
// (decode_batch: one Evaluator::step_batch per round) and each gets exactly
// what decoding it alone gives: its tokens, stop reason, step count, last
// logits bit for bit, and every entry its cache holds afterwards. On the
// tiny LLaMA, Gemma 3 (sliding-window layers), Qwen2 and Qwen3 files, in
// both arithmetic modes.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>

#include "harness/inference.h"
#include "model/llama_model.h"
#include "model/steps.h"
#include "policies/full_cache.h"
#include "policies/policy_cache.h"
#include "policies/policy_spec.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"
#include "tests/support/registry_specs.h"

namespace kvbench {
namespace {

constexpr int kBudget = 24;
// Prompt lengths and generation limits of the three sequences: the shortest
// limit drops out of the batch first, so later rounds run with fewer rows.
constexpr int kPrompt[] = {40, 57, 70};
constexpr int kMaxNew[] = {9, 4, 12};

std::vector<std::string> batch_specs() {
  std::vector<std::string> specs = test::registry_specs(kBudget);
  for (const char* s : {"h2o:budget=24+offload:page=8", "snapkv:budget=24,window=8",
                        "streaming:budget=24,sinks=4,pos=contiguous", "window:budget=24+int8",
                        "kivi2:group=16,residual=32", "tova:budget=24+merge"})
    specs.push_back(s);
  return specs;
}

// A cache of one kind: a policy's, or the full cache at an element type.
struct Made {
  std::unique_ptr<PolicyCache> policy;
  std::unique_ptr<FullCache> full;
  KvCache& cache() { return policy ? static_cast<KvCache&>(*policy) : *full; }
};

class BatchedDecode : public testing::TestWithParam<MatmulMode> {
 protected:
  void SetUp() override { load(test::tiny_model_path()); }
  void load(const std::string& path) {
    model_ = LlamaModel::load(path);
    eval_ = std::make_unique<Evaluator>(*model_, 2, GetParam());
    for (int i = 0; i < 3; ++i)
      prompts_.push_back(test::some_tokens(kPrompt[i], model_->config().n_vocab, 31 + i));
    ctx_ = cache_context(*model_, 128, 5);
  }

  Made make(const std::string& spec) const {
    Made m;
    if (spec == "f32" || spec == "f16") {
      m.full = std::make_unique<FullCache>(model_->kv_shape(),
                                           spec == "f16" ? KvElement::F16 : KvElement::F32);
      return m;
    }
    m.policy = PolicyCache::create(parse_policy_spec(spec), ctx_);
    // Supplied importance (the oracle's hindsight, KVzip's pass): any table will do.
    if (m.policy->needs_hindsight() || m.policy->needs_reconstruction()) {
      std::mt19937 rng(3);
      std::uniform_real_distribution<float> u(0.0f, 1.0f);
      for (int l = 0; l < ctx_.shape.n_layers; ++l)
        for (int h = 0; h < ctx_.shape.n_kv_heads; ++h) {
          std::vector<float> imp(256);
          for (auto& x : imp) x = u(rng);
          m.policy->set_importance(l, h, imp);
        }
    }
    return m;
  }

  // Each sequence prefilled alone (chunks of 16) into its own cache.
  void prefill_all(std::vector<Made>& caches, std::vector<std::vector<float>>& logits) {
    for (int i = 0; i < 3; ++i) {
      logits[i].assign(model_->config().n_vocab, 0.0f);
      prefill(*eval_, caches[i].cache(), prompts_[i], fixed_chunks(kPrompt[i], 16),
              {.last_logits = logits[i].data()});
      if (caches[i].policy) caches[i].policy->end_prefill();
    }
  }

  DecodeOptions options(int i) const {
    DecodeOptions o;
    o.start = kPrompt[i];
    o.max_new_tokens = kMaxNew[i];
    return o;
  }

  void check_every_spec() {
    std::vector<std::string> specs = batch_specs();
    specs.insert(specs.begin(), {"f32", "f16"});
    int batched_rounds = 0;
    for (const std::string& spec : specs) {
      SCOPED_TRACE(spec);
      std::vector<Made> alone(3), together(3);
      for (int i = 0; i < 3; ++i) {
        alone[i] = make(spec);
        together[i] = make(spec);
      }
      std::vector<std::vector<float>> la(3), lt(3);
      prefill_all(alone, la);
      prefill_all(together, lt);
      std::vector<Decoded> a;
      for (int i = 0; i < 3; ++i) a.push_back(decode(*eval_, alone[i].cache(), la[i], options(i)));
      std::vector<BatchSequence> seqs;
      for (int i = 0; i < 3; ++i) seqs.push_back({&together[i].cache(), &lt[i], options(i)});
      const std::vector<Decoded> t = decode_batch(*eval_, seqs);
      ASSERT_EQ(t.size(), 3u);
      for (int i = 0; i < 3; ++i) {
        SCOPED_TRACE("sequence " + std::to_string(i));
        EXPECT_EQ(t[i].tokens, a[i].tokens);
        EXPECT_EQ(t[i].stopped_at_eog, a[i].stopped_at_eog);
        EXPECT_EQ(t[i].hit_context, a[i].hit_context);
        EXPECT_EQ(t[i].steps, a[i].steps);
        EXPECT_EQ(0, std::memcmp(la[i].data(), lt[i].data(), la[i].size() * sizeof(float)));
        if (alone[i].policy) {
          for (int l = 0; l < ctx_.shape.n_layers; ++l)
            for (int h = 0; h < ctx_.shape.n_kv_heads; ++h) {
              const auto ea = alone[i].policy->store().entries(l, h);
              const auto et = together[i].policy->store().entries(l, h);
              ASSERT_EQ(ea.size(), et.size()) << "layer " << l << " head " << h;
              for (size_t e = 0; e < ea.size(); ++e) {
                EXPECT_EQ(ea[e].pos, et[e].pos);
                EXPECT_EQ(ea[e].src, et[e].src);
                EXPECT_EQ(ea[e].cold, et[e].cold);
              }
            }
        } else {
          EXPECT_EQ(alone[i].full->n_tokens(), together[i].full->n_tokens());
        }
      }
      // Rows actually shared a step (not every sequence stopped at once).
      batched_rounds += std::min({t[0].steps, t[1].steps, t[2].steps});
    }
    EXPECT_GT(batched_rounds, 0) << "no round decoded three sequences together";
  }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Evaluator> eval_;
  std::vector<std::vector<int32_t>> prompts_;
  CacheContext ctx_;
};

class BatchedDecodeGemma3 : public BatchedDecode {
 protected:
  void SetUp() override { load(test::tiny_gemma3_path()); }
};
class BatchedDecodeQwen2 : public BatchedDecode {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Qwen2)); }
};
class BatchedDecodeQwen3 : public BatchedDecode {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Qwen3)); }
};
class BatchedDecodePhi3 : public BatchedDecode {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Phi3)); }
};
class BatchedDecodeGemma2 : public BatchedDecode {
 protected:
  void SetUp() override { load(test::tiny_arch_path(TinyArch::Gemma2)); }
};

TEST_P(BatchedDecode, EachSequenceDecodesAsAloneForEverySpec) { check_every_spec(); }
TEST_P(BatchedDecodeGemma3, EachSequenceDecodesAsAloneForEverySpec) { check_every_spec(); }
TEST_P(BatchedDecodeQwen2, EachSequenceDecodesAsAloneForEverySpec) { check_every_spec(); }
TEST_P(BatchedDecodeQwen3, EachSequenceDecodesAsAloneForEverySpec) { check_every_spec(); }
TEST_P(BatchedDecodePhi3, EachSequenceDecodesAsAloneForEverySpec) { check_every_spec(); }
TEST_P(BatchedDecodeGemma2, EachSequenceDecodesAsAloneForEverySpec) { check_every_spec(); }

std::string mode_name(const testing::TestParamInfo<MatmulMode>& p) {
  return p.param == MatmulMode::Exact ? "Exact" : "Quantized";
}
INSTANTIATE_TEST_SUITE_P(Modes, BatchedDecode,
                         testing::Values(MatmulMode::Quantized, MatmulMode::Exact), mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, BatchedDecodeGemma3,
                         testing::Values(MatmulMode::Quantized, MatmulMode::Exact), mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, BatchedDecodeQwen2,
                         testing::Values(MatmulMode::Quantized, MatmulMode::Exact), mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, BatchedDecodeQwen3,
                         testing::Values(MatmulMode::Quantized, MatmulMode::Exact), mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, BatchedDecodePhi3,
                         testing::Values(MatmulMode::Quantized, MatmulMode::Exact), mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, BatchedDecodeGemma2,
                         testing::Values(MatmulMode::Quantized, MatmulMode::Exact), mode_name);

// Two rows may not share a cache: a cache steps one sequence at a time.
TEST(BatchedStep, RefusesTwoRowsOfOneCache) {
  auto model = LlamaModel::load(test::tiny_model_path());
  Evaluator eval(*model, 1);
  FullCache cache(model->kv_shape(), KvElement::F32);
  const BatchToken rows[] = {{1, 0, 0, &cache}, {2, 0, 1, &cache}};
  std::vector<float> logits(2 * model->config().n_vocab);
  EXPECT_THROW(eval.step_batch(rows, logits.data()), std::invalid_argument);
}

}  // namespace
}  // namespace kvbench
