// Hostile model files and cache snapshots: positions a snapshot forges (the
// cache's arithmetic on them must not overflow), GGUF keys of the wrong type,
// and GGUF files whose tensors do not match their hyper-parameters. The CLI
// cases assert the error contract (exit 2, one "error:" line naming the file
// and the field, key or tensor, nothing written); the library cases the
// typed exception and its message.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "harness/snapshot/snapshot_file.h"
#include "policies/cache_errors.h"
#include "policies/policy_cache.h"
#include "tests/hostile/forged_files.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;
using test::ForgedModel;
using test::run_kvbench;
using test::scratch;
using test::tree;

// --- positions in a store (item 9)
// ---------------------------------------------

CacheContext small_context() {
  CacheContext c;
  c.shape = {2, 1, 2, 8};
  c.rope.n_dims = 8;
  c.context_tokens = 64;
  return c;
}

// One step of `positions` for sequence 0 (constant keys and values).
void step(PolicyCache& c, std::vector<int32_t> positions) {
  StepInfo info;
  info.seq = 0;
  info.phase = StepPhase::Prefill;
  info.positions = positions;
  c.begin_step(info);
  const KvShape& sh = c.shape();
  const std::vector<float> kv(positions.size() * sh.n_kv_heads * sh.head_dim, 0.5f);
  for (int l = 0; l < sh.n_layers; ++l) c.append(l, kv.data(), kv.data());
  c.end_step();
}

std::string state_of(const PolicyCache& c) {
  std::ostringstream out;
  StateWriter w(out);
  c.save_state(w);
  return out.str();
}

template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

// Positions enter a store through steps and shifts too: each is checked
// against kMaxPosition, a refused one changes nothing, and any position the
// store holds leaves next_position() in int32.
TEST(HostileModel, StepsAndShiftsStayWithinTheLargestPosition) {
  auto cache = PolicyCache::create(parse_policy_spec("full"), small_context());
  step(*cache, {0, 1, 2, 3});
  const std::string before = state_of(*cache);
  const std::string max = std::to_string(kMaxPosition);
  for (int32_t p : {kMaxPosition + 1, INT32_MAX, -1, INT32_MIN}) {
    EXPECT_EQ(error_of<SequenceError>([&] {
                step(*cache, {4, p});
              }),
              "step: position " + std::to_string(p) + " is outside [0, " + max + "]");
    EXPECT_FALSE(cache->store().in_step());
    EXPECT_TRUE(state_of(*cache) == before) << "a refused step changed the cache";
  }
  // seq_add pushing past the maximum: refused before anything moves.
  EXPECT_EQ(error_of<SequenceError>([&] { cache->seq_add(0, -1, -1, kMaxPosition); }),
            "seq_add: position 1 would move to 1073741824, beyond the largest "
            "position " +
                max);
  EXPECT_EQ(error_of<SequenceError>([&] { cache->seq_add(0, 3, 4, INT32_MAX); }),
            "seq_add: position 3 would move to 2147483650, beyond the largest "
            "position " +
                max);
  // llabs(INT64_MIN) overflows: the shift is compared without it.
  EXPECT_EQ(error_of<SequenceError>([&] { cache->seq_add(0, -1, -1, INT64_MIN); }),
            "seq_add: shift -9223372036854775808 is beyond int32");
  EXPECT_TRUE(state_of(*cache) == before) << "a refused shift changed the cache";
  // Up to the maximum itself: next_position is then 2^30, and a step there is
  // refused.
  cache->seq_add(0, 3, 4, kMaxPosition - 3);
  EXPECT_EQ(cache->pos_max(0), kMaxPosition);
  EXPECT_EQ(cache->next_position(0), kMaxPosition + 1);
  EXPECT_EQ(error_of<SequenceError>([&] { step(*cache, {cache->next_position(0)}); }),
            "step: position 1073741824 is outside [0, " + max + "]");
}

// A payload's other positions and counters: the query ring's positions and
// the decode-step counter (incremented after each decode step: loaded at
// INT64_MAX it overflowed).
// --- positions in snapshots (item 9) -----------------------------------------

// The names under `dir` (what a command may have written there).
std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& [name, content] : tree(dir)) out.push_back(name);
  return out;
}

// A snapshot of a short document on the tiny model (policy `full`), written by
// the kvbench under test: <dir>/doc.kvc.
std::string saved_snapshot(const std::string& dir) {
  std::ofstream(dir + "/doc.txt") << "A short document about the river and the town.";
  const std::string kvc = dir + "/doc.kvc";
  const auto r = run_kvbench("cache save -m " + test::tiny_model_path() + " --policy full -c " +
                             dir + "/doc.txt -o " + kvc);
  EXPECT_EQ(r.code, 0) << r.err;
  return kvc;
}

// `ask` on the snapshot must refuse it naming the file and `field`, and
// write nothing.
void expect_refused(const std::string& dir, const std::string& kvc, const std::string& field) {
  const auto before = names(dir);
  const auto r =
      run_kvbench("ask -m " + test::tiny_model_path() + " --cache " + kvc + " --question hi");
  expect_input_error(r, kvc + ": payload byte ");
  EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
  EXPECT_EQ(names(dir), before) << "something was written";
}

// The fuzzer's finding: an entry at position 2^31 - 1 made next_position()
// (largest + 1) overflow. Every position a snapshot holds is now checked when
// it is read; the other spellings: INT32_MIN, -2, one past the maximum, and
// the evicted-position mark.
TEST(HostileModel, SnapshotPositionsAreRangeCheckedWhenRead) {
  const std::string dir = scratch("kvc-positions");
  const std::string clean = saved_snapshot(dir);
  const std::string max = std::to_string(kMaxPosition);
  struct Case {
    int32_t pos;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {INT32_MAX, "positions[0] = 2147483647 is outside [0, " + max + "]"},
           {INT32_MIN, "positions[0] = -2147483648 is outside [0, " + max + "]"},
           {-2, "positions[0] = -2 is outside [0, " + max + "]"},
           {kMaxPosition + 1, "positions[0] = 1073741824 is outside [0, " + max + "]"}}) {
    SCOPED_TRACE(c.pos);
    const std::string kvc = dir + "/pos.kvc";
    fs::copy_file(clean, kvc, fs::copy_options::overwrite_existing);
    test::forge_payload(kvc, [&](std::string& raw) {
      test::put_i32(raw, test::first_position_offset(raw), c.pos);
    });
    expect_refused(dir, kvc, "layer 0 KV head 0 main segment: " + c.message);
  }
  const std::string kvc = dir + "/evicted.kvc";
  fs::copy_file(clean, kvc, fs::copy_options::overwrite_existing);
  test::forge_payload(kvc, [&](std::string& raw) {
    test::put_i32(raw, test::evicted_mark_offset(raw), INT32_MAX);
  });
  expect_refused(dir, kvc, "store: evicted positions[0] = 2147483647 is outside [-1, " + max + "]");
  // The largest position a cache holds, but beyond the document: the question
  // would continue where the document does not end.
  fs::copy_file(clean, kvc, fs::copy_options::overwrite_existing);
  test::forge_payload(kvc, [&](std::string& raw) {
    test::put_i32(raw, test::first_position_offset(raw), kMaxPosition);
  });
  expect_refused(dir, kvc, "document: sequence 0 continues at position 1073741824, beyond the");
  // The unchanged file, forged the same way with no change, still answers.
  fs::copy_file(clean, kvc, fs::copy_options::overwrite_existing);
  test::forge_payload(kvc, [](std::string&) {});
  const auto ok =
      run_kvbench("ask -m " + test::tiny_model_path() + " --cache " + kvc + " --question hi");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST(HostileModel, PayloadRingPositionsAndCountersAreRangeChecked) {
  CacheContext ctx = small_context();
  auto cache = PolicyCache::create(parse_policy_spec("snapkv:budget=10,window=4"), ctx);
  std::vector<int32_t> pos(6);
  std::iota(pos.begin(), pos.end(), 0);
  StepInfo info;
  info.seq = 0;
  info.positions = pos;
  cache->begin_step(info);
  const KvShape& sh = cache->shape();
  const std::vector<float> kv(pos.size() * sh.n_kv_heads * sh.head_dim, 0.5f);
  const std::vector<float> q(pos.size() * sh.n_q_heads * sh.head_dim, 0.25f);
  // A marker position the ring records (and nothing else holds).
  const std::vector<int32_t> marked(pos.size(), 777777);
  for (int l = 0; l < sh.n_layers; ++l) {
    cache->append(l, kv.data(), kv.data());
    cache->observe_queries(l, q.data(), marked);
  }
  cache->end_step();
  SnapshotDocument doc;
  doc.tokens.assign(pos.size(), 1);
  std::ostringstream out;
  StateWriter w(out);
  write_snapshot_payload(w, *cache, doc);
  const std::string clean = out.str();

  auto read_error = [](const std::string& raw) {
    return error_of<SnapshotError>([&] {
      std::istringstream in(raw);
      StateReader r(in, raw.size(), "payload");
      read_snapshot_payload(r);
    });
  };
  EXPECT_EQ(read_error(clean), "(no error)");
  std::string raw = clean;
  int32_t marker = 777777;
  const size_t at = raw.find(std::string(reinterpret_cast<const char*>(&marker), 4));
  ASSERT_NE(at, std::string::npos);
  test::put_i32(raw, at, INT32_MAX);
  EXPECT_NE(read_error(raw).find("cache: ring positions[0] = 2147483647 is outside [0, " +
                                 std::to_string(kMaxPosition) + "]"),
            std::string::npos)
      << read_error(raw);
  // The decode-step counter: the i64 right before the ring's sequence (0)
  // and capacity (4) in the cache section.
  raw = clean;
  const int64_t steps = 0;
  const int32_t seq_cap[2] = {0, 4};
  std::string pattern(reinterpret_cast<const char*>(&steps), 8);
  pattern.append(reinterpret_cast<const char*>(seq_cap), 8);
  const size_t c = raw.find(pattern, raw.find("PCAC"));
  ASSERT_NE(c, std::string::npos);
  const int64_t huge = INT64_MAX;
  std::memcpy(raw.data() + c, &huge, 8);
  EXPECT_NE(read_error(raw).find("decode steps: 9223372036854775807 is outside [0, 2147483647]"),
            std::string::npos)
      << read_error(raw);
}

// --- GGUF keys of the wrong type (item 13a)
// --------------------------------------

// `info` loads the whole model: the error names the file and the key.
void expect_key_error(const ForgedModel& m, const std::string& dir, const std::string& name,
                      const std::string& message) {
  const std::string path = dir + "/" + name + ".gguf";
  m.write(path);
  expect_input_error(run_kvbench("info --model " + path), path + ": " + message);
}

// The reproducer: gemma3.attention.sliding_window_pattern as an array of u32
// instead of booleans was read through an accessor that knew the key but not
// the file. Every typed key now goes through the file's getters.
TEST(HostileModel, GgufKeysOfTheWrongTypeNameTheFileAndTheKey) {
  const std::string dir = scratch("gguf-key-types");
  {
    ForgedModel m = test::tiny_model(true);
    std::vector<GgufValue> items(3, test::gguf_u32(1));
    m.key("gemma3.attention.sliding_window_pattern") = test::gguf_array(GgufType::U32, items);
    expect_key_error(m, dir, "pattern-u32",
                     "key 'gemma3.attention.sliding_window_pattern' has type "
                     "array[u32], expected "
                     "array[bool]");
  }
  // block_count (a u32) of every other type, in both architectures.
  struct Wrong {
    std::string name;
    GgufValue value;
    std::string type;
  };
  const std::vector<Wrong> wrongs = {
      {"string", test::gguf_string("17"), "string"},
      {"f32", test::gguf_f32(17.0), "f32"},
      {"f64", test::gguf_f64(17.0), "f64"},
      {"bool", test::gguf_bool(true), "bool"},
      {"array", test::gguf_array(GgufType::U32, {test::gguf_u32(17)}), "array[u32]"},
  };
  for (bool gemma3 : {false, true}) {
    const std::string key = std::string(gemma3 ? "gemma3" : "llama") + ".block_count";
    for (const Wrong& w : wrongs) {
      ForgedModel m = test::tiny_model(gemma3);
      m.key(key) = w.value;
      expect_key_error(m, dir, key + "-" + w.name,
                       "key '" + key + "' has type " + w.type + ", expected an unsigned integer");
    }
    ForgedModel m = test::tiny_model(gemma3);
    m.key(key) = test::gguf_i32(-17);
    expect_key_error(m, dir, key + "-negative", "key '" + key + "' is negative (-17)");
  }
  // Keys of the other accessors: string, float, bool, and arrays of each
  // element type.
  struct KeyCase {
    std::string key;
    GgufValue value;
    std::string message;
  };
  const std::vector<KeyCase> cases = {
      {"general.architecture", test::gguf_u32(1),
       "key 'general.architecture' has type u32, expected string"},
      {"llama.rope.freq_base", test::gguf_string("1e4"),
       "key 'llama.rope.freq_base' has type string, expected a number"},
      {"llama.attention.layer_norm_rms_epsilon", test::gguf_bool(true),
       "key 'llama.attention.layer_norm_rms_epsilon' has type bool, expected a "
       "number"},
      {"tokenizer.ggml.add_bos_token", test::gguf_u32(1),
       "key 'tokenizer.ggml.add_bos_token' has type u32, expected bool"},
      {"tokenizer.ggml.model", test::gguf_f32(2.0),
       "key 'tokenizer.ggml.model' has type f32, expected string"},
      {"tokenizer.ggml.tokens", test::gguf_array(GgufType::U32, {test::gguf_u32(0)}),
       "key 'tokenizer.ggml.tokens' has type array[u32], expected "
       "array[string]"},
      {"tokenizer.ggml.merges", test::gguf_string("a b"),
       "key 'tokenizer.ggml.merges' has type string, expected array"},
      {"tokenizer.ggml.token_type", test::gguf_array(GgufType::STRING, {test::gguf_string("1")}),
       "key 'tokenizer.ggml.token_type' has type array[string], expected "
       "array[i32]"},
      {"tokenizer.ggml.bos_token_id", test::gguf_string("1"),
       "key 'tokenizer.ggml.bos_token_id' has type string, expected an "
       "unsigned integer"},
      {"tokenizer.chat_template", test::gguf_u32(7),
       "key 'tokenizer.chat_template' has type u32, expected string"},
  };
  for (const KeyCase& c : cases) {
    ForgedModel m = test::tiny_model(false);
    m.key(c.key) = c.value;
    expect_key_error(m, dir, c.key, c.message);
  }
  {
    ForgedModel m = test::tiny_model(true);
    m.key("tokenizer.ggml.scores") = test::gguf_array(GgufType::STRING, {test::gguf_string("0")});
    expect_key_error(m, dir, "scores-strings",
                     "key 'tokenizer.ggml.scores' has type array[string], "
                     "expected array[f32]");
  }
}

// --- tensors that do not match the hyper-parameters (item 13b)
// --------------------

// `info` refuses the file naming it and the tensor; `cache save` from it
// writes nothing.
void expect_tensor_error(const ForgedModel& m, const std::string& dir, const std::string& name,
                         const std::string& message) {
  const std::string path = dir + "/" + name + ".gguf";
  m.write(path);
  expect_input_error(run_kvbench("info --model " + path), path + ": " + message);
  std::ofstream(dir + "/doc.txt") << "A document.";
  const auto before = names(dir);
  expect_input_error(
      run_kvbench("cache save -m " + path + " -c " + dir + "/doc.txt -o " + dir + "/out.kvc"),
      path + ": " + message);
  EXPECT_EQ(names(dir), before) << "something was written";
}

// The reproducer: a Gemma 3 file declaring 17 layers with 18 layers of
// tensors ran as 17 layers, the 18th silently unused.
TEST(HostileModel, Gemma3WithALayerBeyondBlockCountIsRefused) {
  const std::string dir = scratch("gguf-gemma3-18");
  ForgedModel m = test::tiny_model(true);
  for (int l = 3; l < 18; ++l) m.copy_layer(l % 3, l);
  m.key("gemma3.block_count") = test::gguf_u32(17);
  expect_tensor_error(m, dir, "gemma3-18-of-17",
                      "tensor 'blk.17.attn_norm.weight' is for layer 17, but "
                      "gemma3.block_count "
                      "is 17 (layers 0..16)");
  // The same file declaring its 18 layers loads.
  m.key("gemma3.block_count") = test::gguf_u32(18);
  m.write(dir + "/gemma3-18.gguf");
  const auto ok = run_kvbench("info --model " + dir + "/gemma3-18.gguf");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("layers 18,"), std::string::npos) << ok.out;
}

// An extra layer, a missing layer, a stray tensor, a tensor of the other
// architecture, and counts that disagree with shapes, in both architectures.
TEST(HostileModel, TensorsMustMatchTheHyperParameters) {
  const std::string dir = scratch("gguf-tensors");
  for (bool gemma3 : {false, true}) {
    const std::string arch = gemma3 ? "gemma3" : "llama";
    SCOPED_TRACE(arch);
    {  // block_count 2, three layers of tensors
      ForgedModel m = test::tiny_model(gemma3);
      m.key(arch + ".block_count") = test::gguf_u32(2);
      expect_tensor_error(m, dir, arch + "-extra-layer",
                          "tensor 'blk.2.attn_norm.weight' is for layer 2, but " + arch +
                              ".block_count is 2 (layers 0..1)");
    }
    {  // block_count 3, layer 2's tensors gone
      ForgedModel m = test::tiny_model(gemma3);
      m.drop_tensors([](const std::string& n) { return n.rfind("blk.2.", 0) == 0; });
      expect_tensor_error(
          m, dir, arch + "-missing-layer",
          "missing tensor 'blk.2.attn_norm.weight' (" + arch + ".block_count is 3)");
    }
    {  // one tensor of a layer missing
      ForgedModel m = test::tiny_model(gemma3);
      m.drop_tensors([](const std::string& n) { return n == "blk.1.ffn_up.weight"; });
      expect_tensor_error(m, dir, arch + "-missing-tensor",
                          "missing tensor 'blk.1.ffn_up.weight' (" + arch + ".block_count is 3)");
    }
    {  // a stray tensor, and a layer tensor of no known kind
      for (const std::string stray : {"stray.weight", "blk.0.attn_rot_embd", "blk.x.attn_q.weight",
                                      "blk.-1.attn_norm.weight"}) {
        ForgedModel m = test::tiny_model(gemma3);
        test::ForgedTensor t = *m.tensor("output_norm.weight");
        t.name = stray;
        m.tensors.push_back(t);
        expect_tensor_error(m, dir, arch + "-stray",
                            "unknown tensor '" + stray + "' (not part of a " + arch + " model");
      }
    }
    {  // head_count_kv that the K and V shapes contradict
      ForgedModel m = test::tiny_model(gemma3);
      m.key(arch + ".attention.head_count_kv") = test::gguf_u32(1);
      const std::string k = gemma3 ? "[96, 64], expected [96, 32]" : "[96, 32], expected [96, 16]";
      expect_tensor_error(m, dir, arch + "-kv-heads",
                          "tensor 'blk.0.attn_k.weight' has shape " + k);
    }
    {  // the vocabulary: ARCH.vocab_size, and the tokenizer against token_embd's
      // rows
      ForgedModel m = test::tiny_model(gemma3);
      const int64_t rows = m.tensor("token_embd.weight")->ne[1];
      m.key(arch + ".vocab_size") = test::gguf_u32(rows + 1);
      expect_tensor_error(m, dir, arch + "-vocab-size",
                          "key '" + arch + ".vocab_size' = " + std::to_string(rows + 1) +
                              ", but tensor 'token_embd.weight' has " + std::to_string(rows) +
                              " rows");
      m = test::tiny_model(gemma3);
      test::ForgedTensor& e = *m.tensor("token_embd.weight");
      e.data.resize(e.data.size() / rows * (rows + 1),
                    0);  // one more (zero) row
      e.ne[1] = rows + 1;
      m.drop_key(arch + ".vocab_size");
      if (test::ForgedTensor* out = m.tensor("output.weight")) {
        out->data.resize(out->data.size() / rows * (rows + 1), 0);
        out->ne[1] = rows + 1;
      }
      expect_tensor_error(m, dir, arch + "-embedding-rows",
                          "tokenizer.ggml.tokens has " + std::to_string(rows) +
                              " tokens, but tensor 'token_embd.weight' has " +
                              std::to_string(rows + 1) + " rows");
    }
  }
  // A gemma3 tensor in a llama file.
  ForgedModel m = test::tiny_model(false);
  test::ForgedTensor t = *m.tensor("blk.0.attn_norm.weight");
  t.name = "blk.0.post_ffw_norm.weight";
  m.tensors.push_back(t);
  expect_tensor_error(m, dir, "llama-gemma3-norm",
                      "unknown tensor 'blk.0.post_ffw_norm.weight' (not part of a llama model");
}

}  // namespace
}  // namespace kvbench
