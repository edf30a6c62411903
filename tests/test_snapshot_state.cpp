// Cache state snapshots in the policies layer, on the tiny model: for every
// storage layout and the main policy families, the state read back is the
// state written (byte for byte when written again), and the loaded cache
// keeps behaving exactly like the never-saved one (further decode steps,
// maintenance, offload restore, statistics, query rings, importance); a
// corrupt payload is refused and never crashes. Checkpoints: after each
// answer on a sharing sequence, the cache is the document's state again.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "harness/inference.h"
#include "harness/reconstruction.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/cache_errors.h"
#include "policies/policy_cache.h"
#include "policies/state_io.h"
#include "tests/support/random_projection.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"
#include "tests/support/registry_specs.h"
#include "tests/support/state_round_trip.h"

namespace kvbench {
namespace {

using test::some_tokens;

// Every registered component (registry_specs: every codec, KIVI, mixed,
// every scorer, allocator and extra), then combinations: offload to a
// file, KIVI's variants, contiguous positions.
std::vector<std::string> snapshot_specs() {
  std::vector<std::string> specs = test::registry_specs(40);
  for (const char* combination :
       {"hybrid:budget=40+pyramid", "snapkv:budget=40,window=8",
        "expected:budget=40,sinks=2,future=64", "tova:budget=32+merge", "knorm:budget=40+adakv",
        "h2o:budget=48+offload:page=8",
        "h2o:budget=40+offload:page=8,rule=importance,threshold=0.05",
        "window:budget=40+int8+offload:page=8,tier=file",
        "h2o:budget=40+kivi2:group=16,residual=32,keys=token",
        "kivi2:group=16,residual=32,keys=f32", "kivi2:group=16,residual=32,values=f32",
        "streaming:budget=40,sinks=4,pos=contiguous"})
    specs.push_back(combination);
  return specs;
}
const std::vector<std::string> kSpecs = snapshot_specs();

class SnapshotState : public testing::Test {
 protected:
  void SetUp() override { load(test::tiny_model_path()); }
  void load(const std::string& path) {
    model_ = LlamaModel::load(path);
    eval_ = std::make_unique<Evaluator>(*model_, 2);
  }
  int n_vocab() const { return model_->config().n_vocab; }

  std::unique_ptr<PolicyCache> make(const std::string& spec, int64_t context) {
    // As the runner makes it (Gemma 3: each local layer's window and RoPE),
    // with a random output projection for the scorers that read one.
    CacheContext c = cache_context(*model_, context, 7);
    c.output_projection = std::make_shared<test::RandomProjection>(c.shape, model_->config().dim);
    return PolicyCache::create(parse_policy_spec(spec), c);
  }
  void check_round_trips();

  // Prefill of `tokens` on seq 0 in chunks at the cache's next position, then end_prefill.
  std::vector<float> prefill(PolicyCache& cache, const std::vector<int32_t>& tokens, int chunk) {
    std::vector<float> logits(n_vocab());
    for (size_t b = 0; b < tokens.size(); b += chunk) {
      const size_t e = std::min(tokens.size(), b + chunk);
      std::vector<int32_t> pos(e - b);
      std::iota(pos.begin(), pos.end(), cache.next_position(0));
      eval_->step(std::span(tokens.data() + b, e - b), pos, 0, StepPhase::Prefill, cache,
                  Logits::Last, logits.data());
    }
    // The end of the prompt as the harness ends it (a reconstruction pass
    // first for a policy that needs one).
    finish_prompt(*eval_, cache, tokens, chunk);
    return logits;
  }

  // Greedy decode steps on seq 0; returns every step's logits.
  std::vector<std::vector<float>> decode(PolicyCache& cache, std::vector<float> logits, int steps) {
    std::vector<std::vector<float>> out;
    for (int i = 0; i < steps; ++i) {
      const int32_t t[1] = {
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())};
      const int32_t p[1] = {cache.next_position(0)};
      eval_->step(t, p, 0, StepPhase::Decode, cache, Logits::Last, logits.data());
      out.push_back(logits);
    }
    return out;
  }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Evaluator> eval_;
};

TEST_F(SnapshotState, RoundTripThenDecodingIsBitIdenticalForEveryLayoutAndPolicy) {
  check_round_trips();
}

// The same on every other family's tiny file: Gemma 3 (local layers with a
// window, post-norms), Qwen2 (biases), Qwen3 (QK-norms), Phi-3 (fused
// tensors, LongRoPE's factors and attention factor), Gemma 2 (soft-capped
// attention).
class SnapshotStateFamily : public SnapshotState, public testing::WithParamInterface<TinyArch> {
 protected:
  void SetUp() override {
    load(GetParam() == TinyArch::Gemma3 ? test::tiny_gemma3_path()
                                        : test::tiny_arch_path(GetParam()));
  }
};
TEST_P(SnapshotStateFamily, RoundTripThenDecodingIsBitIdenticalForEveryLayoutAndPolicy) {
  check_round_trips();
}
INSTANTIATE_TEST_SUITE_P(Families, SnapshotStateFamily,
                         testing::Values(TinyArch::Gemma3, TinyArch::Qwen2, TinyArch::Qwen3,
                                         TinyArch::Phi3, TinyArch::Gemma2),
                         [](const auto& info) { return std::string(tiny_arch_name(info.param)); });

void SnapshotState::check_round_trips() {
  const auto doc = some_tokens(150, n_vocab(), 11);
  for (const std::string& spec : kSpecs) {
    SCOPED_TRACE(spec);
    auto cache = make(spec, 150);
    if (cache->needs_hindsight() || cache->needs_reconstruction()) {
      // Importance tables of different lengths per head.
      for (int l = 0; l < model_->config().n_layers; ++l)
        for (int h = 0; h < model_->config().n_kv_heads; ++h) {
          std::vector<float> imp(100 + 10 * l + h);
          for (size_t i = 0; i < imp.size(); ++i)
            imp[i] = static_cast<float>((i * 7 + l * 3 + h) % 13);
          cache->set_importance(l, h, imp);
        }
    }
    const auto logits = prefill(*cache, doc, 32);
    // A few decode steps first, so rings, statistics and decode counters hold something.
    const auto warm = decode(*cache, logits, 3);
    const std::string bytes = test::state_bytes(*cache);
    auto loaded = test::load_bytes(bytes);
    // What a snapshot does not carry comes from the model it is checked
    // against, as `kvbench ask --cache` gives it (Gemma 2's soft-cap decides
    // restore by importance).
    loaded->adopt_model(cache->context());
    EXPECT_EQ(test::state_bytes(*loaded), bytes) << "save(load(x)) must be x";
    EXPECT_EQ(to_string(loaded->spec()), to_string(cache->spec()));
    const MemoryReport a = cache->memory(), b = loaded->memory();
    EXPECT_EQ(a.hot, b.hot);
    EXPECT_EQ(a.cold, b.cold);
    EXPECT_EQ(a.policy_state, b.policy_state);
    EXPECT_EQ(loaded->next_position(0), cache->next_position(0));
    for (int l = 0; l < model_->config().n_layers; ++l)
      for (int h = 0; h < model_->config().n_kv_heads; ++h)
        ASSERT_EQ(loaded->held_sources(l, h), cache->held_sources(l, h));
    // Cold pages' key bounds are recomputed on load: exactly the saved ones.
    if (const ColdTier* cold = cache->store().cold()) {
      int pages = 0;
      for (int h = 0; h < cold->n_heads(); ++h) {
        const auto& a = cold->head(h).pages;
        const auto& b = loaded->store().cold()->head(h).pages;
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i, ++pages) {
          ASSERT_EQ(a[i].kmin, b[i].kmin);
          ASSERT_EQ(a[i].kmax, b[i].kmax);
        }
      }
      EXPECT_GT(pages, 0);
    }
    // Sixteen more decode steps on both: maintenance, eviction, restore and
    // quantization run on the loaded state exactly as on the original.
    const auto want = decode(*cache, warm.back(), 16);
    const auto got = decode(*loaded, warm.back(), 16);
    for (size_t s = 0; s < want.size(); ++s)
      ASSERT_EQ(std::memcmp(want[s].data(), got[s].data(), want[s].size() * sizeof(float)), 0)
          << "step " << s;
    EXPECT_EQ(test::state_bytes(*loaded), test::state_bytes(*cache));
    if (spec.find("offload") != std::string::npos) EXPECT_GT(cache->memory().cold.entries, 0u);
  }
}

TEST_F(SnapshotState, SavingInsideAStepIsRefused) {
  auto cache = make("full", 16);
  const std::vector<int32_t> pos = {0};
  StepInfo info;
  info.positions = pos;
  cache->begin_step(info);
  std::ostringstream out;
  StateWriter w(out);
  EXPECT_THROW(cache->save_state(w), InputError);
}

TEST_F(SnapshotState, EveryTruncationAndByteFlipOfAPayloadIsRefused) {
  // Small payloads of three layouts; every prefix and many flips. A flip may
  // land in data (K/V bytes, statistics) and still parse: then the parsed
  // cache must be written back as exactly the flipped bytes.
  const auto doc = some_tokens(40, n_vocab(), 5);
  std::mt19937 rng(3);
  for (const char* spec : {"h2o:budget=24+offload:page=4", "kivi2:group=8,residual=16",
                           "snapkv:budget=20,window=4+merge"}) {
    SCOPED_TRACE(spec);
    auto cache = make(spec, 40);
    prefill(*cache, doc, 16);
    const std::string bytes = test::state_bytes(*cache);
    int refused = 0;
    const size_t step = std::max<size_t>(1, bytes.size() / 500);
    for (size_t cut = 0; cut < bytes.size(); cut += step) {
      const std::string part = bytes.substr(0, cut);
      EXPECT_THROW(test::load_bytes(part), SnapshotError) << "cut at " << cut;
      ++refused;
    }
    int accepted = 0;
    for (int i = 0; i < 2000; ++i) {
      std::string flipped = bytes;
      flipped[rng() % flipped.size()] ^= static_cast<char>(1u << (rng() % 8));
      try {
        auto c = test::load_bytes(flipped);
        ++accepted;
        ASSERT_EQ(test::state_bytes(*c), flipped);
      } catch (const SnapshotError&) {
      }
    }
    RecordProperty(std::string(spec) + " accepted_flips", accepted);
    EXPECT_GT(refused, 100);
  }
}

TEST_F(SnapshotState, ReadingAPayloadForAnotherConfigurationFailsWithAMessage) {
  auto cache = make("int8", 16);
  prefill(*cache, some_tokens(16, n_vocab(), 1), 8);
  std::string bytes = test::state_bytes(*cache);
  // The spec string is the first field after the tag and its length: "int8" -> "int4".
  const size_t at = bytes.find("int8");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = '4';
  try {
    test::load_bytes(bytes);
    FAIL() << "a payload of int8 rows read as int4 must be refused";
  } catch (const SnapshotError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rows in int8 (group 16) where the policy stores int4"), std::string::npos)
        << what;
    EXPECT_NE(what.find("layer 0 KV head 0 main segment"), std::string::npos) << what;
  }
}

// --- checkpoints ---

class SnapshotCheckpoint : public SnapshotState {};

TEST_F(SnapshotCheckpoint, EveryAnswerLeavesTheDocumentStateExactly) {
  const auto doc = some_tokens(120, n_vocab(), 21);
  const std::vector<std::vector<int32_t>> questions = {some_tokens(9, n_vocab(), 1),
                                                       some_tokens(5, n_vocab(), 2)};
  for (const std::string& spec : kSpecs) {
    if (spec.find("contiguous") != std::string::npos)
      continue;  // cannot share a prefix (tested below)
    SCOPED_TRACE(spec);
    auto cache = make(spec, 120);
    prefill(*cache, doc, 32);
    const std::string document = test::state_bytes(*cache);
    const uint64_t hot = cache->memory().hot.total();
    const auto cp = cache->checkpoint();
    std::vector<std::vector<float>> first;  // per question: its first answer's logits
    for (int round = 0; round < 2; ++round)
      for (size_t q = 0; q < questions.size(); ++q) {
        const int seq = 1 + static_cast<int>(q);
        cache->seq_cp(0, seq, -1, -1);
        // seq_cp copies nothing (it drops restored pages: they follow the next
        // query), for a paging policy (offload, quest) less.
        if (cache->store().cold() == nullptr)
          EXPECT_EQ(cache->memory().hot.total(), hot);
        else
          EXPECT_LE(cache->memory().hot.total(), hot);
        std::vector<float> logits(n_vocab());
        std::vector<int32_t> pos(questions[q].size());
        std::iota(pos.begin(), pos.end(), cache->next_position(seq));
        eval_->step(questions[q], pos, seq, StepPhase::Prefill, *cache, Logits::Last,
                    logits.data());
        cache->end_prefill();
        std::vector<float> answer = logits;
        for (int i = 0; i < 6; ++i) {
          const int32_t t[1] = {static_cast<int32_t>(
              std::max_element(logits.begin(), logits.end()) - logits.begin())};
          const int32_t p[1] = {cache->next_position(seq)};
          eval_->step(t, p, seq, StepPhase::Decode, *cache, Logits::Last, logits.data());
          answer.insert(answer.end(), logits.begin(), logits.end());
        }
        cache->rollback(cp);
        ASSERT_EQ(test::state_bytes(*cache), document) << "round " << round << " question " << q;
        if (round == 0)
          first.push_back(answer);
        else
          ASSERT_EQ(std::memcmp(first[q].data(), answer.data(), answer.size() * sizeof(float)), 0)
              << "question " << q << " answered differently after the other question";
      }
  }
}

TEST_F(SnapshotCheckpoint, RollbackRefusesWhenTheDocumentItselfChangedAndChangesNothing) {
  auto cache = make("full", 64);
  prefill(*cache, some_tokens(64, n_vocab(), 3), 32);
  const auto cp = cache->checkpoint();
  cache->seq_rm(0, 10, 20);
  const std::string changed = test::state_bytes(*cache);
  try {
    cache->rollback(cp);
    FAIL() << "rollback after the document lost entries must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("only sequences created after the checkpoint"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(test::state_bytes(*cache), changed);
  auto other = make("full", 64);
  EXPECT_THROW(other->rollback(cp), InputError);
}

TEST_F(SnapshotCheckpoint, ContiguousPositionsCannotShareTheDocument) {
  auto cache = make("streaming:budget=40,sinks=4,pos=contiguous", 64);
  prefill(*cache, some_tokens(64, n_vocab(), 3), 32);
  EXPECT_THROW(cache->seq_cp(0, 1, -1, -1), UnsupportedOperation);
}

}  // namespace
}  // namespace kvbench
