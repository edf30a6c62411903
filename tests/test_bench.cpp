// kvbench bench as users meet it, on the tiny model: every combination of
// the listed values measured once per row, the three output formats, and
// one-line errors (exit 2) for bad values. No timing is asserted beyond
// "a positive rate".
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/bench/compute_peak.h"
#include "harness/bench/kv_memory.h"
#include "model/ops/attention.h"
#include "model/ops/quant_dot.h"
#include "model/testing/tiny_model.h"
#include "tests/support/cli_run.h"
#include "tests/support/reference_gemma3.h"
#include "tests/support/reference_llama.h"

namespace kvbench {
namespace {

using Result = test::CliResult;
Result run(const std::string& args) { return test::run_kvbench("bench " + args); }

using test::expect_input_error;

TEST(Bench, JsonHasOneRowPerCombinationWithStatistics) {
  const Result r =
      run("-m " + test::tiny_model_path() + " -p 8 -n 4 -d 0,20 -r 3 -t 1,2 --kv f32,f16 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u * 2 * 2 * 2);  // threads x kv x depth x {pp8, tg4}
  std::set<std::string> seen;
  for (const auto& row : j) {
    EXPECT_EQ(row["repetitions"], 3);
    ASSERT_EQ(row["samples_ts"].size(), 3u);
    double lo = 1e30, hi = 0;
    for (double v : row["samples_ts"]) {
      EXPECT_GT(v, 0.0);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_GE(row["avg_ts"].get<double>(), lo);
    EXPECT_LE(row["avg_ts"].get<double>(), hi);
    EXPECT_GE(row["median_ts"].get<double>(), lo);
    EXPECT_LE(row["median_ts"].get<double>(), hi);
    EXPECT_GE(row["stddev_ts"].get<double>(), 0.0);
    const std::string test = row["test"];
    const int depth = row["n_depth"];
    EXPECT_EQ(test, (row["n_prompt"] > 0 ? "pp8" : "tg4") + (depth ? std::string(" @ d20") : ""));
    seen.insert(test + "/" + std::to_string(row["threads"].get<int>()) + "/" +
                row["kv"].get<std::string>());
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(Bench, MarkdownTableLikeLlamaBench) {
  const Result r = run("-m " + test::tiny_model_path() + " -p 8 -n 2 -d 10 -r 1 -t 1");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines;
  std::stringstream ss(r.out);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0].rfind("| model", 0), 0u);
  EXPECT_NE(lines[0].find(" t/s |"), std::string::npos);
  EXPECT_NE(lines[1].find("---:"), std::string::npos);
  EXPECT_NE(lines[2].find("pp8 @ d10"), std::string::npos);
  EXPECT_NE(lines[2].find(" f16 "), std::string::npos);  // llama-bench's default KV type
  EXPECT_NE(lines[3].find("tg2 @ d10"), std::string::npos);
  EXPECT_NE(lines[3].find(" ± "), std::string::npos);
}

// The model column names the architecture and the file's type, as
// llama-bench does ("gemma3 ... Q4_K_M"), not always "llama".
TEST(Bench, ModelColumnNamesTheArchitecture) {
  const Result r = run("-m " + test::tiny_gemma3_path() + " -p 4 -n 0 -r 1 -t 1 -o csv");
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t line = r.out.find('\n');
  ASSERT_NE(line, std::string::npos) << r.out;
  EXPECT_EQ(r.out.compare(line + 1, 8, "\"gemma3 "), 0) << r.out;
  const Result l = run("-m " + test::tiny_model_path() + " -p 4 -n 0 -r 1 -t 1 -o csv");
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_EQ(l.out.compare(l.out.find('\n') + 1, 7, "\"llama "), 0) << l.out;
}

TEST(Bench, CsvHasAHeaderAndOneLinePerTest) {
  const Result r = run("-m " + test::tiny_model_path() + " -p 4 -n 0 -r 2 -t 1 --kv f32 -o csv");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("model,model_file,size_bytes,params,backend,threads,kv,", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
  EXPECT_NE(r.out.find(",\"f32\",\"full\",4,0,0,1,\"pp4\",2,"), std::string::npos) << r.out;
}

TEST(Bench, RooflineAddsTheLimitsOfEachTest) {
  const std::string m =
      "-m " + test::tiny_model_path() + " -p 8 -n 4 -d 0,16 -r 1 -t 1,2 --roofline";
  const Result j = run(m + " -o json");
  ASSERT_EQ(j.code, 0) << j.err;
  for (const auto& row : nlohmann::json::parse(j.out)) {
    const bool tg = row["n_gen"] > 0;
    // tg: bytes per step grow with the context read (f16 K/V); pp: FLOPs grow with the depth.
    EXPECT_EQ(row["bytes_per_token"].get<double>() > 0, tg);
    EXPECT_EQ(row["flops_per_token"].get<double>() > 0, !tg);
    EXPECT_GT(row["read_bandwidth_bytes_per_s"].get<double>(), 0.0);
    // The peaks, where the CPU has the instructions (0 otherwise).
    EXPECT_EQ(row["peak_f32_flops_per_s"].get<double>() > 0, f32_fma_loop().ops > 0);
    EXPECT_EQ(row["peak_int8_ops_per_s"].get<double>() > 0, int8_vnni_loop().ops > 0);
  }
  const auto rows = nlohmann::json::parse(j.out);
  EXPECT_GT(rows[3]["bytes_per_token"].get<double>(),
            rows[1]["bytes_per_token"].get<double>());  // tg4 @ d16 > tg4
  EXPECT_GT(rows[2]["flops_per_token"].get<double>(), rows[0]["flops_per_token"].get<double>());
  const Result md = run(m);
  ASSERT_EQ(md.code, 0) << md.err;
  EXPECT_NE(md.out.find("roofline: read bandwidth "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find(" GB/s with 1 thread "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find(" GB/s with 2 threads "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| 2 | f16 | tg4 @ d16 |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("roofline: AVX-512 VNNI int8 peak "), std::string::npos) << md.out;
  const Result exact = run(m + " --exact");
  ASSERT_EQ(exact.code, 0) << exact.err;
  EXPECT_NE(exact.out.find("roofline: AVX-512 f32 FMA peak "), std::string::npos) << exact.out;
}

// --policy: specs split where a new spec starts (a spec's own parameters
// keep their commas), one row per policy and test, roofline bytes from the
// policy's own hot tier: a cache bounded at 16 tokens reads fewer K/V bytes
// per token than the full cache at depth 48.
TEST(Bench, PolicyRowsCarryTheSpecAndTheBytesThatPolicyReads) {
  const Result r = run("-m " + test::tiny_model_path() +
                       " -p 8 -n 4 -d 48 -r 2 -t 1 --policy "
                       "full,h2o:budget=16,timing=call,full+int8 --roofline -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u * 2);
  std::map<std::string, double> tg_bytes;
  for (const auto& row : j) {
    EXPECT_EQ(row["repetitions"], 2);
    for (double v : row["samples_ts"]) EXPECT_GT(v, 0.0);
    if (row["n_gen"] > 0)
      tg_bytes[row["policy"].get<std::string>()] = row["bytes_per_token"].get<double>();
  }
  ASSERT_EQ(tg_bytes.size(), 3u) << r.out;
  EXPECT_GT(tg_bytes["full"], tg_bytes["h2o:budget=16,timing=call"]);
  EXPECT_GT(tg_bytes["full"], tg_bytes["full+int8"]);
  expect_input_error(run("-m " + test::tiny_model_path() + " --policy nosuch"), "--policy");
  // A newline in the value stays visible: the error is still one line.
  expect_input_error(run("-m " + test::tiny_model_path() + " --policy 'full\nfull'"),
                     "'full\\nfull'");
  expect_input_error(run("-m " + test::tiny_model_path() + " --policy full --kv f32"),
                     "--kv and --policy");
}

// --interleave: the same tests (the same bytes read per token, the same
// repetitions) with the configurations taking turns: rows by depth, then
// test, then configuration, each marked "interleaved". Not with --kv-memory.
TEST(Bench, InterleavedRepetitionsMeasureTheSameTests) {
  const std::string args = "-m " + test::tiny_model_path() +
                           " -p 8 -n 4 -d 16,48 -r 3 -t 1 --policy full,window:budget=16,full+int4"
                           " --roofline -o json";
  const Result a = run(args), b = run(args + " --interleave");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  ASSERT_EQ(ja.size(), 3u * 2 * 2);
  ASSERT_EQ(jb.size(), ja.size());
  std::map<std::string, double> bytes;  // policy|test -> bytes per token
  for (const auto& row : ja) {
    EXPECT_FALSE(row["interleaved"].get<bool>());
    bytes[row["policy"].get<std::string>() + "|" + row["test"].get<std::string>()] =
        row["bytes_per_token"].get<double>();
  }
  const std::vector<std::string> order = {"full", "window:budget=16", "full+int4"};
  for (size_t i = 0; i < jb.size(); ++i) {
    const auto& row = jb[i];
    EXPECT_TRUE(row["interleaved"].get<bool>());
    EXPECT_EQ(row["repetitions"], 3);
    EXPECT_EQ(row["policy"], order[i % 3]) << i;  // configurations innermost
    EXPECT_EQ(row["n_depth"], i < 6 ? 16 : 48) << i;
    const std::string key = row["policy"].get<std::string>() + "|" + row["test"].get<std::string>();
    ASSERT_TRUE(bytes.count(key)) << key;
    EXPECT_EQ(row["bytes_per_token"].get<double>(), bytes[key]) << key;
  }
  expect_input_error(
      run("-m " + test::tiny_model_path() + " -p 0 -n 4 --policy full --interleave --kv-memory 1G"),
      "--interleave and --kv-memory exclude each other");
}

// -b: tg tests at each batch size (pp at b1 only), named "tg4 b3", with
// tokens/s over all sequences and, with --roofline, the weights' bytes
// shared by the batch (fewer bytes per token at b3 than at b1); a policy's
// batch too.
TEST(Bench, BatchRowsDecodeSeveralSequencesTogether) {
  const Result r = run("-m " + test::tiny_model_path() +
                       " -p 8 -n 4 -d 0,20 -b 1,3 -r 2 -t 1 --kv f32 --roofline -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u * 3);  // depth x {pp8, tg4, tg4 b3}
  std::map<std::string, double> bytes;
  for (const auto& row : j) {
    for (double v : row["samples_ts"]) EXPECT_GT(v, 0.0);
    const int b = row["n_batch"];
    EXPECT_TRUE(b == 1 || (b == 3 && row["n_gen"] == 4)) << row.dump();
    bytes[row["test"].get<std::string>()] = row["bytes_per_token"].get<double>();
  }
  EXPECT_EQ(bytes.count("tg4 b3"), 1u);
  EXPECT_EQ(bytes.count("tg4 @ d20 b3"), 1u);
  EXPECT_LT(bytes["tg4 b3"], bytes["tg4"]);
  EXPECT_LT(bytes["tg4 @ d20 b3"], bytes["tg4 @ d20"]);
  const Result p = run("-m " + test::tiny_model_path() +
                       " -p 0 -n 3 -d 24 -b 2 -r 1 -t 1 --policy h2o:budget=16,timing=call");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("tg3 @ d24 b2"), std::string::npos) << p.out;
  expect_input_error(run("-m " + test::tiny_model_path() + " -b 0"),
                     "--batch must be between 1 and 1024");
}

// --kv-memory: the batch is the most sequences whose hot K/V fits in the
// cap, measured per policy: a cache bounded at 16 tokens fits more
// sequences in the same bytes than the full cache at depth 40, and a cap
// smaller than one sequence gives no row.
TEST(Bench, KvMemoryPicksTheLargestBatchThatFits) {
  const Result r = run("-m " + test::tiny_model_path() +
                       " -p 0 -n 4 -d 40 -r 1 -t 1 --kv-memory 64K,1K --policy "
                       "full,h2o:budget=16,timing=call -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : j) rows[row["policy"].get<std::string>()] = row;
  ASSERT_EQ(j.size(), 2u) << r.out;  // 1K holds no sequence of either
  EXPECT_NE(r.err.find("holds none"), std::string::npos) << r.err;
  for (const auto& [policy, row] : rows) {
    const uint64_t per = row["kv_bytes_per_sequence"], cap = row["kv_memory"];
    const int b = row["n_batch"];
    EXPECT_EQ(cap, 65536u);
    EXPECT_LE(b * per, cap) << policy;
    EXPECT_GT((b + 1) * per, cap) << policy;
  }
  EXPECT_LT(rows["h2o:budget=16,timing=call"]["kv_bytes_per_sequence"].get<uint64_t>(),
            rows["full"]["kv_bytes_per_sequence"].get<uint64_t>());
  EXPECT_GT(rows["h2o:budget=16,timing=call"]["n_batch"].get<int>(),
            rows["full"]["n_batch"].get<int>());
  expect_input_error(run("-m " + test::tiny_model_path() + " --kv-memory 1G -b 2"),
                     "--kv-memory and --batch exclude each other");
  expect_input_error(run("-m " + test::tiny_model_path() + " --kv-memory 12Q"),
                     "--kv-memory: '12Q' is not a byte count");
}

// -b at a deep context on SmolLM2: 1024 sequences of 8k tokens of f32 K/V
// need about 386 GiB. The full cache is refused before any test runs; a
// policy's cache once its depth context is in, before its batch is copied.
TEST(Bench, BatchesThatCannotFitAreRefused) {
  if (available_memory_bytes() > (380ull << 30)) GTEST_SKIP() << "this machine has 380 GiB free";
  const std::string m = " -m " + test::smollm2_path();
  expect_input_error(run(m + " -p 0 -n 128 -d 8064 -b 1,1024 -t 1 --kv f32"),
                     "tg128 @ d8064 b1024 (f32): 1024 sequences need about 360 GiB");
  expect_input_error(run(m + " -p 0 -n 16 -d 4096 -b 1024 -t 2 --policy full"),
                     "tg16 @ d4096 b1024 (full): 1024 sequences need about");
}

TEST(Bench, BadValuesAreOneLineErrors) {
  const std::string m = " -m " + test::tiny_model_path();
  expect_input_error(run(m + " -p abc"), "--n-prompt: 'abc' is not an integer");
  expect_input_error(run(m + " -n -1"), "--n-gen must be between");
  expect_input_error(run(m + " -t 0"), "--threads must be between 1 and 512");
  expect_input_error(run(m + " -r 0"), "--repetitions");
  expect_input_error(run(m + " --kv q8"), "--kv: unknown KV precision 'q8'");
  expect_input_error(run(m + " -o xml"), "--output: unknown format 'xml'");
  expect_input_error(run(m + " -p 0 -n 0"), "nothing to measure");
  expect_input_error(run(m + " -p 1,,2"), "--n-prompt");
  expect_input_error(run(m + " -d 1000000 -p 64"),
                     "--n-depth 1000000 plus a test of 64 tokens exceeds");
  expect_input_error(run(" -m /no/such/model.gguf"), "/no/such/model.gguf");
  expect_input_error(run(m + " --attention f16"),
                     "--attention: unknown value 'f16' (f32, bf16, int8q, bf16+int8q)");
  expect_input_error(run(m + " --attention bf16 --exact"), "--attention bf16 needs the fast mode");
  expect_input_error(run(m + " --attention int8q --exact"),
                     "--attention int8q needs the fast mode");
}

// --attention int8q decodes over quantized caches (both model families)
// and says so in the backend column.
TEST(Bench, Int8QueryAttentionIsNamedInTheBackend) {
  for (const std::string& model : {test::tiny_model_path(), test::tiny_gemma3_path()}) {
    const Result b = run("-m " + model +
                         " -p 0 -n 4 -d 70 -r 1 -t 2 --policy full+int4,full+int8 --attention "
                         "bf16+int8q -o json");
    ASSERT_EQ(b.code, 0) << b.err;
    const auto j = nlohmann::json::parse(b.out);
    ASSERT_EQ(j.size(), 2u);
    for (const auto& row : j) {
      const std::string backend = row["backend"].get<std::string>();
      EXPECT_TRUE(backend.ends_with(" int8q") || backend.ends_with(" int8q (f32 sums)")) << row;
      EXPECT_GT(row["median_ts"].get<double>(), 0.0);
    }
  }
}

// --attention bf16 runs (on both model families) and says so in the backend
// column; the default row does not.
TEST(Bench, Bf16AttentionIsNamedInTheBackend) {
  for (const std::string& model : {test::tiny_model_path(), test::tiny_gemma3_path()}) {
    const Result b = run("-m " + model + " -p 70 -n 2 -r 1 -t 2 --attention bf16 -o json");
    ASSERT_EQ(b.code, 0) << b.err;
    const auto j = nlohmann::json::parse(b.out);
    ASSERT_EQ(j.size(), 2u);
    for (const auto& row : j) {
      EXPECT_NE(row["backend"].get<std::string>().find(" bf16-attn"), std::string::npos) << row;
      EXPECT_GT(row["median_ts"].get<double>(), 0.0);
    }
    const Result f = run("-m " + model + " -p 8 -n 0 -r 1 -t 1 -o json");
    ASSERT_EQ(f.code, 0) << f.err;
    EXPECT_EQ(nlohmann::json::parse(f.out)[0]["backend"].get<std::string>().find("bf16"),
              std::string::npos);
  }
}

// `bench args` with KVBENCH_CPU=cpu (null: this CPU's best path), the
// variable restored after.
Result run_on(const char* cpu, const std::string& args) {
  const char* old = std::getenv("KVBENCH_CPU");
  const std::string saved = old ? old : "";
  if (cpu) setenv("KVBENCH_CPU", cpu, 1);
  const Result r = run(args);
  if (cpu) old ? setenv("KVBENCH_CPU", saved.c_str(), 1) : unsetenv("KVBENCH_CPU");
  EXPECT_EQ(r.code, 0) << r.err;
  return r;
}

// The first row's backend of `bench args` on path `cpu` (run_on).
std::string backend_on(const char* cpu, const std::string& args) {
  const Result r = run_on(cpu, args);
  return r.code == 0 ? nlohmann::json::parse(r.out)[0]["backend"].get<std::string>() : "";
}

// The backend says when bf16 products are emulated by f32 FMAs (the same
// numbers at about f32 speed): always on the AVX2 path, and on AVX-512 where
// the CPU lacks AVX-512 BF16.
TEST(Bench, Bf16AttentionSaysWhenItIsEmulated) {
  const std::string args = "-m " + test::tiny_model_path() + " -p 8 -n 0 -r 1 -t 1 -o json";
  auto backend = [&](const char* cpu) { return backend_on(cpu, args + " --attention bf16"); };
  if (cpu_path_supported(CpuPath::Avx2))
    EXPECT_EQ(backend("avx2"), "CPU avx2 bf16-attn (emulated)");
  const std::string best = backend(nullptr);
  const bool native = bf16_attention_native(default_cpu_path());
  EXPECT_EQ(best.ends_with(" bf16-attn (emulated)"), !native) << best;
  EXPECT_EQ(best.ends_with(" bf16-attn"), native) << best;
}

// A tiny model whose heads are 64 wide (the int8 query's integer kernels
// take whole 64-element spans; the default tiny model's are 16), written
// once per process.
std::string wide_head_model_path() {
  static const std::string path = [] {
    const std::string p =
        testing::TempDir() + "kvbench-bench-hd64-" + std::to_string(::getpid()) + ".gguf";
    TinyModelOptions o;
    o.dim = 128;
    o.n_heads = 2;
    o.n_kv_heads = 1;
    o.head_dim = 64;
    write_tiny_model(p, o);
    return p;
  }();
  return path;
}

// Every row's backend of `bench args` on path `cpu` (run_on), by the row's
// kv or policy column.
std::map<std::string, std::string> backends_on(const char* cpu, const std::string& args) {
  const Result r = run_on(cpu, args);
  std::map<std::string, std::string> out;
  if (r.code != 0) return out;
  for (const auto& row : nlohmann::json::parse(r.out)) {
    const std::string kv = row["kv"].get<std::string>();
    out[kv.empty() ? row["policy"].get<std::string>() : kv] = row["backend"].get<std::string>();
  }
  return out;
}

// The backend says, row by row, whether the int8 query's products were
// summed as integers: on the AVX-512 (VNNI) and AVX2 paths for int8, int4
// and KIVI keys in groups of 32 at a head size that is a multiple of 64
// ("int8q"); as f32 products of integer codes on the scalar path, at other
// head sizes and other groups ("int8q (f32 sums)": the same numbers,
// slower); and not at all on an f32 or f16 cache (nothing said).
TEST(Bench, Int8QuerySaysRowByRowWhetherItsSumsAreIntegers) {
  const std::string policies =
      " -p 0 -n 2 -d 40 -r 1 -t 1 -o json --attention int8q --policy "
      "full,full+int8,full+int4,full+kivi2,full+int4:group=64";
  const std::string wide = "-m " + wide_head_model_path() + policies;
  const std::map<std::string, std::string> scalar = backends_on("scalar", wide);
  EXPECT_EQ(scalar.at("full"), "CPU scalar");
  for (const char* q : {"full+int8", "full+int4", "full+kivi2", "full+int4:group=64"})
    EXPECT_EQ(scalar.at(q), "CPU scalar int8q (f32 sums)") << q;
  for (CpuPath p : {CpuPath::Avx2, CpuPath::Avx512}) {
    if (!cpu_path_supported(p)) continue;
    const std::string name(cpu_path_name(p));
    const std::map<std::string, std::string> b = backends_on(name.c_str(), wide);
    EXPECT_EQ(b.at("full"), "CPU " + name);
    for (const char* q : {"full+int8", "full+int4", "full+kivi2"})
      EXPECT_EQ(b.at(q), "CPU " + name + " int8q") << q;
    EXPECT_EQ(b.at("full+int4:group=64"), "CPU " + name + " int8q (f32 sums)");
    // The default tiny model's heads are 16 wide: no integer kernel takes them.
    const std::map<std::string, std::string> narrow =
        backends_on(name.c_str(), "-m " + test::tiny_model_path() + policies);
    EXPECT_EQ(narrow.at("full+int8"), "CPU " + name + " int8q (f32 sums)");
  }
  // The plain caches of --kv hold f32 or f16 keys.
  const std::map<std::string, std::string> kv =
      backends_on(nullptr, "-m " + wide_head_model_path() +
                               " -p 0 -n 2 -d 40 -r 1 -t 1 -o json "
                               "--attention int8q --kv f32,f16");
  for (const char* k : {"f32", "f16"})
    EXPECT_EQ(kv.at(k), "CPU " + std::string(cpu_path_name(default_cpu_path()))) << k;
}

}  // namespace
}  // namespace kvbench
