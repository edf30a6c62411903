// Snapshot files (.kvc) on the tiny model: a loaded document answers
// bit-identically to a fresh prefill (full, int8 and compressed policies;
// zstd and gzip), the next-token logits need no warm-up token, every header
// field changed alone is refused with a message naming it, truncated and
// corrupted files are refused every time, other models and precisions are
// refused with one line listing the fields, a failed load leaves the live
// cache exactly as it was, and writes are atomic. On SmolLM2 (skipped when
// absent): a fact from the start of a document is answered the same after
// load as after a fresh prefill.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "datasets/prompt.h"
#include "harness/run/answer.h"
#include "harness/sha256.h"
#include "harness/snapshot/document_qa.h"
#include "harness/snapshot/snapshot_file.h"
#include "harness/snapshot/snapshot_model.h"
#include "model/testing/tiny_model.h"
#include "tests/support/reference_llama.h"
#include "tests/support/state_round_trip.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string scratch(const std::string& name) {
  const std::string d = testing::TempDir() + "kvbench-snapshot-" + std::to_string(::getpid()) + "/";
  fs::create_directories(d);
  return d + name;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Prose-like text of about `words` words (the tiny model's byte-level BPE
// encodes anything).
std::string some_text(int words, uint32_t seed) {
  static const char* vocab[] = {"the",   "river", "town",  "of",     "stone", "was",
                                "built", "near",  "a",     "bridge", "and",   "people",
                                "came",  "to",    "trade", "grain",  "in",    "autumn"};
  std::mt19937 rng(seed);
  std::string s;
  for (int i = 0; i < words; ++i) {
    s += vocab[rng() % (sizeof vocab / sizeof *vocab)];
    s += (i % 11 == 10) ? ". " : " ";
  }
  return s;
}

// A new cache of `spec` for `model` (its shape and RoPE), doc prefilled.
std::unique_ptr<PolicyCache> prefilled_cache(const std::string& spec, const LlamaModel& model,
                                             Evaluator& eval, SnapshotDocument& doc) {
  CacheContext cc;
  cc.shape = model.kv_shape();
  cc.rope = model.config().rope;
  cc.context_tokens = static_cast<int64_t>(doc.tokens.size());
  auto cache = PolicyCache::create(parse_policy_spec(spec), cc);
  prefill_document(eval, *cache, doc);
  return cache;
}

// A snapshot file's parts, to change the header and seal it again.
struct Parts {
  std::vector<uint8_t> prefix, payload;
  json header;
};

Parts split(const std::vector<uint8_t>& f) {
  Parts p;
  uint32_t h;
  std::memcpy(&h, f.data() + f.size() - 44, 4);
  const size_t header_at = f.size() - 44 - h;
  p.prefix.assign(f.begin(), f.begin() + 16);
  p.payload.assign(f.begin() + 16, f.begin() + static_cast<std::ptrdiff_t>(header_at));
  p.header = json::parse(f.begin() + static_cast<std::ptrdiff_t>(header_at), f.end() - 44);
  return p;
}

std::vector<uint8_t> seal(const Parts& p) {
  std::vector<uint8_t> f = p.prefix;
  f.insert(f.end(), p.payload.begin(), p.payload.end());
  const std::string text = p.header.dump(1);
  f.insert(f.end(), text.begin(), text.end());
  const uint32_t h = static_cast<uint32_t>(text.size());
  const uint8_t* hp = reinterpret_cast<const uint8_t*>(&h);
  f.insert(f.end(), hp, hp + 4);
  const std::string hex = sha256_hex(text.data(), text.size());
  for (int i = 0; i < 32; ++i)
    f.push_back(static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16)));
  const char end[] = "KVBC-END";
  f.insert(f.end(), end, end + 8);
  return f;
}

class SnapshotFile : public testing::Test {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(test::tiny_model_path());
    eval_ = std::make_unique<Evaluator>(*model_, 2, MatmulMode::Exact);
    expect_.model = model_identity(*model_);
    expect_.activations = "f32";
  }

  // `cache` holding `doc`, saved to the scratch file `name`; its path.
  std::string saved(const PolicyCache& cache, const SnapshotDocument& doc,
                    const std::string& name) const {
    const std::string path = scratch(name);
    save_cache_snapshot(path, cache, doc, expect_.model);
    return path;
  }

  // A document prefilled into a new cache with `spec`.
  std::unique_ptr<PolicyCache> prefilled(const std::string& spec, SnapshotDocument& doc,
                                         int words = 300, int chunk = 64) {
    doc = document_prefix(*model_, "Read this.", some_text(words, 5));
    doc.chunk = chunk;
    doc.activations = "f32";
    return prefilled_cache(spec, *model_, *eval_, doc);
  }

  std::vector<DocumentAnswer> ask(PolicyCache& cache, const SnapshotDocument& doc,
                                  const std::vector<std::string>& qs) {
    const auto cp = cache.checkpoint();
    std::vector<DocumentAnswer> out;
    for (size_t i = 0; i < qs.size(); ++i)
      out.push_back(answer_from_document(*eval_, cache, cp, doc,
                                         question_suffix(*model_, qs[i], "Answer:"),
                                         1 + static_cast<int>(i), 12));
    return out;
  }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Evaluator> eval_;
  SnapshotExpect expect_;
};

TEST_F(SnapshotFile, LoadedDocumentAnswersBitForBitLikeAFreshPrefill) {
  const std::vector<std::string> questions = {"Where was the bridge?", "Who came to trade grain?",
                                              "What was built?"};
  for (const char* spec : {"full", "int8", "snapkv:budget=64,window=8",
                           "h2o:budget=80+offload:page=8", "kivi2:group=16,residual=32"})
    for (SnapshotCompression comp : {SnapshotCompression::Zstd, SnapshotCompression::Gzip}) {
      SCOPED_TRACE(std::string(spec) + " " + std::string(compression_name(comp)));
      SnapshotDocument doc;
      auto fresh = prefilled(spec, doc);
      const std::string path = scratch("doc.kvc");
      SnapshotOptions so;
      so.compression = comp;
      so.level = comp == SnapshotCompression::Zstd ? 3 : 6;
      save_cache_snapshot(path, *fresh, doc, expect_.model, so);
      const auto want = ask(*fresh, doc, questions);

      std::unique_ptr<PolicyCache> loaded;
      const SnapshotDocument got_doc = load_cache_snapshot(path, expect_, loaded);
      ASSERT_TRUE(loaded);
      EXPECT_EQ(got_doc.tokens, doc.tokens);
      EXPECT_EQ(got_doc.context_begin, doc.context_begin);
      EXPECT_EQ(got_doc.chunk, doc.chunk);
      ASSERT_EQ(got_doc.logits.size(), doc.logits.size());
      EXPECT_EQ(
          std::memcmp(got_doc.logits.data(), doc.logits.data(), doc.logits.size() * sizeof(float)),
          0);
      EXPECT_EQ(test::state_bytes(*loaded), test::state_bytes(*fresh));
      const auto got = ask(*loaded, got_doc, questions);
      for (size_t q = 0; q < questions.size(); ++q) {
        EXPECT_EQ(got[q].first_logits_sha256, want[q].first_logits_sha256) << questions[q];
        EXPECT_EQ(got[q].tokens, want[q].tokens) << questions[q];
      }
      const SnapshotInfo info = read_snapshot_info(path);
      EXPECT_EQ(info.header["payload"]["compression"], compression_name(comp));
      EXPECT_EQ(info.header["memory"]["total"].get<uint64_t>(), fresh->memory().total());
      EXPECT_EQ(info.header["precision"]["kv"], fresh->spec().storage.name);
    }
}

TEST_F(SnapshotFile, PrefixAndSuffixAreExactlyTheRunnersPromptAndAnswerLikeIt) {
  // The cached prefix + a question's suffix are the tokens build_prompt lays
  // out for the same instance, and with the full cache the answer equals
  // answer_greedy's on the whole prompt (the runner's path).
  SnapshotDocument doc;
  auto cache = prefilled("full", doc);
  Instance in;
  in.id = "x";
  in.task = "qa";
  in.grader = "contains";
  in.preamble = "Read this.";
  in.context = some_text(300, 5);
  in.question = "Where was the bridge?";
  in.answer_prefix = "Answer:";
  in.max_new_tokens = 12;
  const Prompt p = build_prompt(*model_, in);
  std::vector<int32_t> joined = doc.tokens;
  const auto suffix = question_suffix(*model_, in.question, in.answer_prefix);
  joined.insert(joined.end(), suffix.begin(), suffix.end());
  EXPECT_EQ(joined, p.tokens);
  EXPECT_EQ(doc.context_begin, p.context_tokens.begin);

  auto runner = PolicyCache::create(parse_policy_spec("full"), cache->context());
  AnswerOptions o;
  o.max_new_tokens = 12;
  o.chunk = doc.chunk;
  const Answer want = answer_greedy(*eval_, *runner, p, o);
  const auto got = ask(*cache, doc, {in.question});
  EXPECT_EQ(got[0].tokens, want.tokens);
}

TEST_F(SnapshotFile, QuestionsAreAddedWholeUnlessTheBudgetIsShared) {
  // A question in chunks of 4 after a document held by a 48-token window.
  // Sharing the budget, a streaming window evicts document entries while
  // the question streams in, so the first answer token already sees fewer
  // of them; added whole, nothing is evicted after the document. A window
  // that compresses once (after the prompt) evicts only after the
  // question's last chunk, so its first answer token is the same either way.
  const auto suffix = question_suffix(*model_, "Where was the bridge?", "Answer:");
  ASSERT_GT(suffix.size(), 8u);
  auto answer = [&](PolicyCache& c, const SnapshotDocument& d, QuestionBudget b) {
    return answer_from_document(*eval_, c, c.checkpoint(), d, suffix, 1, 6, b);
  };
  SnapshotDocument doc;
  auto stream = prefilled("window:budget=48", doc, 300, 4);
  const DocumentAnswer added = answer(*stream, doc, QuestionBudget::Added);
  const DocumentAnswer shared = answer(*stream, doc, QuestionBudget::Shared);
  EXPECT_NE(shared.first_logits_sha256, added.first_logits_sha256);
  // Added is the default, and the cache is back to the document each time.
  EXPECT_EQ(answer_from_document(*eval_, *stream, stream->checkpoint(), doc, suffix, 1, 6)
                .first_logits_sha256,
            added.first_logits_sha256);
  SnapshotDocument doc_once;
  auto once = prefilled("window:budget=48,timing=once", doc_once, 300, 4);
  EXPECT_EQ(answer(*once, doc_once, QuestionBudget::Added).first_logits_sha256,
            answer(*once, doc_once, QuestionBudget::Shared).first_logits_sha256);
}

TEST_F(SnapshotFile, TheStoredNextTokenLogitsNeedNoWarmUpToken) {
  for (const char* spec : {"full", "h2o:budget=80"}) {
    SCOPED_TRACE(spec);
    SnapshotDocument doc;
    auto fresh = prefilled(spec, doc);
    const std::string path = saved(*fresh, doc, "warm.kvc");
    std::unique_ptr<PolicyCache> loaded;
    const SnapshotDocument ldoc = load_cache_snapshot(path, expect_, loaded);
    // Continue the document itself for 8 tokens on both caches, straight
    // from the logits after its last token.
    auto continue_from = [&](PolicyCache& c, std::vector<float> logits) {
      std::vector<float> all;
      for (int i = 0; i < 8; ++i) {
        const int32_t t[1] = {
            static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())};
        const int32_t p[1] = {c.next_position(0)};
        eval_->step(t, p, 0, StepPhase::Decode, c, Logits::Last, logits.data());
        all.insert(all.end(), logits.begin(), logits.end());
      }
      return all;
    };
    const auto want = continue_from(*fresh, doc.logits);
    const auto got = continue_from(*loaded, ldoc.logits);
    ASSERT_EQ(want.size(), got.size());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);

    // The warm-up hack (feeding the last document token again to get logits)
    // is not only unneeded but wrong: the token is then in the cache twice.
    std::unique_ptr<PolicyCache> warmed;
    load_cache_snapshot(path, expect_, warmed);
    std::vector<float> warm(doc.logits.size());
    const int32_t t[1] = {doc.tokens.back()};
    const int32_t p[1] = {static_cast<int32_t>(doc.tokens.size()) - 1};
    eval_->step(t, p, 0, StepPhase::Decode, *warmed, Logits::Last, warm.data());
    EXPECT_NE(std::memcmp(warm.data(), doc.logits.data(), warm.size() * sizeof(float)), 0);
  }
}

TEST_F(SnapshotFile, EveryHeaderFieldChangedAloneIsRefusedNamingIt) {
  SnapshotDocument doc;
  auto cache = prefilled("h2o:budget=80+offload:page=8", doc);
  const std::string path = saved(*cache, doc, "fields.kvc");
  const std::vector<uint8_t> original = read_bytes(path);
  const Parts parts = split(original);
  // The live cache a failed load must leave alone.
  std::unique_ptr<PolicyCache> live;
  load_cache_snapshot(path, expect_, live);
  const PolicyCache* live_ptr = live.get();
  const std::string live_state = test::state_bytes(*live);

  const json flat = parts.header.flatten();
  int fields = 0;
  for (const auto& [pointer, value] : flat.items()) {
    json changed = value;
    if (value.is_boolean())
      changed = !value.get<bool>();
    else if (value.is_number_unsigned())
      changed = value.get<uint64_t>() + 1;
    else if (value.is_number_integer())
      changed = value.get<int64_t>() + 1;
    else if (value.is_number_float())
      changed = value.get<double>() * 2 + 1;
    else if (value.is_string()) {
      std::string s = value.get<std::string>();
      // Hex digests: change one digit (same length); other text: append.
      if (s.size() >= 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos)
        s[0] = s[0] == '0' ? '1' : '0';
      else
        s += "x";
      changed = s;
    } else {
      FAIL() << "unexpected header value at " << pointer;
    }
    Parts p = parts;
    p.header[json::json_pointer(pointer)] = changed;
    std::string name = pointer.substr(1);
    std::replace(name.begin(), name.end(), '/', '.');
    SCOPED_TRACE(name);
    try {
      load_cache_snapshot_bytes(seal(p), "doc.kvc", expect_, live);
      ADD_FAILURE() << "a snapshot with " << name << " changed was accepted";
    } catch (const SnapshotError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("doc.kvc: ", 0), 0u) << what;
      EXPECT_NE(what.find(name), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    ASSERT_EQ(live.get(), live_ptr);
    ++fields;
  }
  EXPECT_EQ(test::state_bytes(*live), live_state);
  EXPECT_GE(fields, 40);
  RecordProperty("fields", fields);

  // A field the reader does not know, and a missing one.
  Parts extra = parts;
  extra.header["comment"] = "hello";
  EXPECT_THROW(
      {
        try {
          load_cache_snapshot_bytes(seal(extra), "doc.kvc", expect_, live);
        } catch (const SnapshotError& e) {
          EXPECT_NE(std::string(e.what()).find("unknown field comment"), std::string::npos)
              << e.what();
          throw;
        }
      },
      SnapshotError);
  Parts missing = parts;
  missing.header["model"].erase("n_layers");
  try {
    load_cache_snapshot_bytes(seal(missing), "doc.kvc", expect_, live);
    ADD_FAILURE() << "accepted without model.n_layers";
  } catch (const SnapshotError& e) {
    EXPECT_NE(std::string(e.what()).find("model.n_layers (missing)"), std::string::npos)
        << e.what();
  }
  // The unchanged parts sealed again load fine (the test's sealing is right).
  std::unique_ptr<PolicyCache> again;
  load_cache_snapshot_bytes(seal(parts), "doc.kvc", expect_, again);
  EXPECT_EQ(test::state_bytes(*again), live_state);
}

TEST_F(SnapshotFile, TruncatedAndCorruptedFilesAreRefusedEveryTime) {
  SnapshotDocument doc;
  auto cache = prefilled("snapkv:budget=64,window=8", doc);
  const std::string path = saved(*cache, doc, "cut.kvc");
  const std::vector<uint8_t> f = read_bytes(path);
  std::unique_ptr<PolicyCache> live;
  load_cache_snapshot(path, expect_, live);
  const std::string live_state = test::state_bytes(*live);
  const PolicyCache* live_ptr = live.get();
  auto refused = [&](const std::vector<uint8_t>& bytes) {
    try {
      load_cache_snapshot_bytes(bytes, "cut.kvc", expect_, live);
    } catch (const SnapshotError& e) {
      return std::string(e.what()).rfind("cut.kvc: ", 0) == 0;
    }
    return false;
  };
  // 64 evenly spaced truncations (the first keeps nothing, the last all but
  // the file's last 1/64), on disk for every eighth one.
  for (int k = 0; k < 64; ++k) {
    const size_t cut = f.size() * k / 64;
    const std::vector<uint8_t> part(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_TRUE(refused(part)) << "cut at " << cut << " of " << f.size();
    if (k % 8 == 0) {
      const std::string p = scratch("part.kvc");
      write_bytes(p, part);
      EXPECT_THROW(load_cache_snapshot(p, expect_, live), SnapshotError) << cut;
    }
  }
  // Random flips: one byte, and bursts of 1-8 bytes, anywhere (prefix,
  // payload, header, trailer).
  std::mt19937 rng(42);
  int flips = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> g = f;
    const int burst = i < 150 ? 1 : 1 + static_cast<int>(rng() % 8);
    for (int b = 0; b < burst; ++b) g[rng() % g.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    EXPECT_TRUE(refused(g)) << "flip " << i;
    ++flips;
  }
  // And each region in turn: first byte of the magic, the version, the
  // payload's middle, the header's middle, the trailer's digest and end marker.
  uint32_t h;
  std::memcpy(&h, f.data() + f.size() - 44, 4);
  for (size_t at : {size_t{0}, size_t{8}, size_t{12}, size_t{16} + (f.size() - 60 - h) / 2,
                    f.size() - 44 - h / 2, f.size() - 44, f.size() - 20, f.size() - 1}) {
    std::vector<uint8_t> g = f;
    g[at] ^= 0x40;
    EXPECT_TRUE(refused(g)) << "byte " << at;
  }
  EXPECT_EQ(live.get(), live_ptr);
  EXPECT_EQ(test::state_bytes(*live), live_state);
  RecordProperty("flips", flips);
}

TEST_F(SnapshotFile, AnotherModelTokenizerOrPrecisionIsRefusedListingTheFields) {
  SnapshotDocument doc;
  auto cache = prefilled("full", doc, 120);
  const std::string path = saved(*cache, doc, "model.kvc");
  auto message = [&](const SnapshotExpect& e) {
    std::unique_ptr<PolicyCache> c;
    try {
      load_cache_snapshot(path, e, c);
    } catch (const SnapshotError& err) {
      EXPECT_FALSE(c) << "a failed load must not fill the cache";
      return std::string(err.what());
    }
    return std::string("accepted");
  };
  // Same shapes and tokenizer, other weights: only the file differs.
  const std::string other = scratch("other-weights.gguf");
  TinyModelOptions o;
  o.seed = 2;
  write_tiny_model(other, o);
  auto m2 = LlamaModel::load(other);
  SnapshotExpect e2{model_identity(*m2), "f32"};
  std::string what = message(e2);
  EXPECT_NE(what.find(path + ": does not match this model / run: model.sha256 (snapshot "),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find("tokenizer"), std::string::npos) << what;
  // Another vocabulary: the tokenizer and the vocabulary size differ too.
  auto spm = LlamaModel::load(test::tiny_model_path(/*spm=*/true));
  what = message({model_identity(*spm), "f32"});
  for (const char* field : {"model.sha256", "model.n_vocab", "tokenizer.fingerprint"})
    EXPECT_NE(what.find(field), std::string::npos) << field << ": " << what;
  // 8-bit activations were not what the document was prefilled with.
  what = message({expect_.model, "q8"});
  EXPECT_NE(what.find("precision.activations (snapshot f32, expected q8)"), std::string::npos)
      << what;
  // Nor bf16 prefill attention (its K/V differ after the first layer).
  what = message({expect_.model, activations_name(MatmulMode::Quantized, {.bf16 = true})});
  EXPECT_NE(what.find("precision.activations (snapshot f32, expected q8+bf16-attn)"),
            std::string::npos)
      << what;
  // A hyper-parameter the file does not carry (e.g. a hand-edited GGUF).
  SnapshotExpect e3 = expect_;
  e3.model.hparams["n_ctx_train"] = 4096;
  e3.model.hparams["rms_eps"] = 1e-6;
  what = message(e3);
  EXPECT_NE(what.find("model.n_ctx_train (snapshot 2048, expected 4096)"), std::string::npos)
      << what;
  EXPECT_NE(what.find("model.rms_eps"), std::string::npos) << what;
  EXPECT_EQ(message(expect_), "accepted");
  // A state saved with bf16 prefill attention loads where that is expected.
  doc.activations = activations_name(MatmulMode::Quantized, {.bf16 = true});
  save_cache_snapshot(path, *cache, doc, expect_.model);
  EXPECT_EQ(message({expect_.model, "q8+bf16-attn"}), "accepted");
  EXPECT_NE(message(expect_).find("(snapshot q8+bf16-attn, expected f32)"), std::string::npos);
  // And with int8-query decode scores, alone or with bf16 (every name fits
  // the field's 16 bytes).
  EXPECT_EQ(activations_name(MatmulMode::Quantized, {.bf16 = true, .int8_query = true}),
            "q8+bf16-attn+i8q");
  for (const AttentionMode m : {AttentionMode{false, true}, AttentionMode{true, true}}) {
    doc.activations = activations_name(MatmulMode::Quantized, m);
    save_cache_snapshot(path, *cache, doc, expect_.model);
    EXPECT_EQ(message({expect_.model, doc.activations}), "accepted") << doc.activations;
    EXPECT_NE(
        message({expect_.model, "q8"}).find("(snapshot " + doc.activations + ", expected q8)"),
        std::string::npos);
  }
}

TEST_F(SnapshotFile, WritesAreAtomicAndLeaveNothingBehindOnFailure) {
  SnapshotDocument doc;
  auto cache = prefilled("int8", doc, 120);
  EXPECT_THROW(save_cache_snapshot("/nonexistent-dir/x.kvc", *cache, doc, expect_.model),
               InputError);
  const std::string path = scratch("atomic.kvc");
  save_cache_snapshot(path, *cache, doc, expect_.model);
  const auto before = read_bytes(path);
  // A cache inside a step cannot be saved; the old file stays as it was.
  const std::vector<int32_t> pos = {static_cast<int32_t>(doc.tokens.size())};
  StepInfo info;
  info.positions = pos;
  cache->begin_step(info);
  EXPECT_THROW(save_cache_snapshot(path, *cache, doc, expect_.model), InputError);
  SnapshotOptions bad;
  bad.level = 99;
  EXPECT_THROW(save_cache_snapshot(path, *cache, doc, expect_.model, bad), InputError);
  EXPECT_EQ(read_bytes(path), before);
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

// --- the real model ---

TEST(SnapshotSmolLM2, AFactFromTheStartOfADocumentIsAnsweredTheSameAfterLoad) {
  const std::string path = test::smollm2_path();
  if (path.empty())
    GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  auto model = LlamaModel::load(path);
  Evaluator eval(*model, 2, MatmulMode::Quantized);
  // About 700 tokens of prose with an invented fact in its first 5%.
  std::string text = "Neken Dengil was born in the town of Mulmere. ";
  const std::string filler =
      "The committee reviewed the proposal for the new library, discussed the budget at length, "
      "and agreed to "
      "meet again after the harvest festival, when the roads would be dry and the members could "
      "travel. ";
  while (text.size() < 3300) text += filler;
  const SnapshotExpect expect{model_identity(*model), "q8"};
  const std::string question = "In which town was Neken Dengil born?";
  const std::string prefix = "Neken Dengil was born in the town of";
  for (const char* spec : {"full", "snapkv:budget=128"}) {
    SCOPED_TRACE(spec);
    SnapshotDocument doc =
        document_prefix(*model, "The following text contains facts about people.", text);
    doc.activations = "q8";
    auto fresh = prefilled_cache(spec, *model, eval, doc);
    const std::string file = scratch("smollm2.kvc");
    save_cache_snapshot(file, *fresh, doc, expect.model);
    const auto suffix = question_suffix(*model, question, prefix);
    const DocumentAnswer want =
        answer_from_document(eval, *fresh, fresh->checkpoint(), doc, suffix, 1, 8);
    std::unique_ptr<PolicyCache> loaded;
    const SnapshotDocument ldoc = load_cache_snapshot(file, expect, loaded);
    const DocumentAnswer got =
        answer_from_document(eval, *loaded, loaded->checkpoint(), ldoc, suffix, 1, 8);
    EXPECT_EQ(got.first_logits_sha256, want.first_logits_sha256);
    EXPECT_EQ(got.text, want.text);
    RecordProperty(std::string(spec) + " answer", got.text);
    if (std::string(spec) == "full")
      EXPECT_NE(got.text.find("Mulmere"), std::string::npos) << got.text;
  }
}

}  // namespace
}  // namespace kvbench
