// kvbench bench: throughput in the manner of llama-bench, on the full cache
// (--kv) or on any policy of the registry (--policy).
//   pp N          prompt processing: N tokens prefilled in one go (chunks of
//                 512, llama-bench's default micro-batch), logits of the last
//   tg N          token generation: N single-token decode steps, logits each
//   ... @ dD      the same after a context of D tokens already in the cache
//   tg N ... bB   B sequences decoding together (-b, llama-batched-bench's
//                 S_TG): each step is one Evaluator::step_batch of B rows, each
//                 sequence on its own copy of the depth context's cache;
//                 tokens/s counts all B sequences' tokens. pp runs at b1 only.
//   ... in M      --kv-memory M: B is the most sequences whose hot K/V (codes
//                 and scales, at its most during the test) fits in M bytes
//                 (harness/bench/kv_memory.h)
// Every option takes a comma-separated list (or repeats); every combination
// of threads x KV precision x depth x test is measured. Each combination gets
// a warm-up (the whole pp test; one tg step), then -r timed repetitions; the
// table shows mean ± sample standard deviation and the median of tokens/s.
// Token ids are deterministic pseudo-random ordinary tokens (no special or
// control token). The depth context is prefilled once per (threads, KV or
// policy) combination; each repetition first rolls the cache back to it (a
// policy cache: a copy of its state after the depth context, made before
// the clock starts). A policy's pp test includes its end-of-prompt work
// (end_prefill: once-timing eviction, restore). --interleave prefills every
// configuration's depth context first and runs each test's repetitions in
// turns over the configurations (A, B, C, A, B, C, ...): slow drift of a
// shared machine then reaches every configuration alike.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/bench/compute_peak.h"
#include "harness/bench/kv_memory.h"
#include "harness/bench/roofline.h"
#include "harness/cli/cli.h"
#include "harness/inference.h"
#include "model/common/error.h"
#include "model/evaluator.h"
#include "model/gguf/ggml_types.h"
#include "model/llama_model.h"
#include "model/ops/attention.h"
#include "model/ops/quant_dot.h"
#include "model/steps.h"
#include "policies/cache_store.h"
#include "policies/codec.h"
#include "policies/full_cache.h"
#include "policies/policy_cache.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

constexpr int kChunk = 512;  // prefill micro-batch (llama-bench's -ub default)

// "512,1024" (and repeated options) -> integers within [lo, hi].
std::vector<int> int_list(const po::variables_map& vm, const std::string& name, int lo, int hi) {
  std::vector<int> out;
  for (const std::string& arg : vm[name].as<std::vector<std::string>>()) {
    std::stringstream ss(arg);
    std::string item;
    while (std::getline(ss, item, ',')) {
      int v = 0;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || ec != std::errc() || end != item.data() + item.size())
        throw InputError("--" + name + ": '" + item + "' is not an integer");
      if (v < lo || v > hi)
        throw InputError("--" + name + " must be between " + std::to_string(lo) + " and " +
                         std::to_string(hi) + ", got " + std::to_string(v));
      out.push_back(v);
    }
    if (arg.empty() || arg.back() == ',')
      throw InputError("--" + name + ": empty value in '" + arg + "'");
  }
  return out;
}

std::vector<KvElement> kv_list(const po::variables_map& vm) {
  std::vector<KvElement> out;
  for (const std::string& arg : vm["kv"].as<std::vector<std::string>>()) {
    std::stringstream ss(arg);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item == "f32")
        out.push_back(KvElement::F32);
      else if (item == "f16")
        out.push_back(KvElement::F16);
      else
        throw InputError("--kv: unknown KV precision '" + item + "' (f32, f16)");
    }
    if (arg.empty() || arg.back() == ',') throw InputError("--kv: empty value in '" + arg + "'");
  }
  return out;
}

const char* kv_name(KvElement e) { return e == KvElement::F16 ? "f16" : "f32"; }

// --policy values: specs separated by commas (or repeated options). A spec's
// own parameters are separated by commas too ("h2o:budget=256,timing=call"),
// so an item that starts with key=value continues the previous spec.
std::vector<std::string> policy_list(const po::variables_map& vm) {
  std::vector<std::string> out;
  if (!vm.count("policy")) return out;
  for (const std::string& arg : vm["policy"].as<std::vector<std::string>>()) {
    std::stringstream ss(arg);
    std::string item;
    bool first = true;
    while (std::getline(ss, item, ',')) {
      const std::string head = item.substr(0, item.find_first_of(":+"));
      if (!first && head.find('=') != std::string::npos)
        out.back() += "," + item;
      else
        out.push_back(item);
      first = false;
    }
    if (arg.empty() || arg.back() == ',')
      throw InputError("--policy: empty value in '" + arg + "'");
  }
  return out;
}

// What a test runs on: the full cache at a KV precision, or a policy.
struct CacheConfig {
  std::string label;  // the table's kv column: "f16", or the policy's spec
  KvElement kv = KvElement::F32;
  bool is_policy = false;
  PolicySpec spec;
};

// Deterministic pseudo-random ordinary tokens: ids whose piece is not empty
// without special rendering (so no control token), never BOS/EOS/end-of-turn.
std::vector<int32_t> bench_tokens(const Tokenizer& tok, int64_t n, uint64_t seed) {
  std::vector<int32_t> out;
  out.reserve(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  while (static_cast<int64_t>(out.size()) < n) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const int32_t id = static_cast<int32_t>(s % static_cast<uint64_t>(tok.n_vocab()));
    if (id == tok.bos() || id == tok.eos() || tok.is_end_of_generation(id)) continue;
    if (tok.token_to_piece(id, false).empty()) continue;
    out.push_back(id);
  }
  return out;
}

// Prefills tokens into a policy cache at [start, start + n) in chunks (a
// contiguous-position policy at its own positions); the last logits into
// last_logits when given.
// The bench tokens at stream positions [start, start + n) in kChunk chunks.
void bench_prefill(Evaluator& eval, KvCache& cache, const std::vector<int32_t>& tokens,
                   int32_t start, float* last_logits = nullptr) {
  prefill(eval, cache, tokens, fixed_chunks(static_cast<int64_t>(tokens.size()), kChunk),
          {.start = start, .last_logits = last_logits});
}

struct Stats {
  double mean = 0, sd = 0, median = 0;
};

Stats stats(std::vector<double> x) {
  Stats s;
  const double n = static_cast<double>(x.size());
  s.mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double ss = 0;
  for (double v : x) ss += (v - s.mean) * (v - s.mean);
  s.sd = x.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  std::sort(x.begin(), x.end());
  s.median = x.size() % 2 ? x[x.size() / 2] : (x[x.size() / 2 - 1] + x[x.size() / 2]) / 2;
  return s;
}

struct Result {
  int threads = 0;
  std::string kv;  // "f32" / "f16", or a policy spec
  bool policy = false;
  int n_prompt = 0, n_gen = 0, depth = 0, batch = 1;
  uint64_t kv_memory = 0;              // --kv-memory's cap (0: none)
  uint64_t kv_bytes_per_sequence = 0;  // measured under a cap: the most one sequence holds
  std::vector<double> tps;             // tokens/s of each repetition
  bool interleaved = false;            // its repetitions took turns with other configurations
  // The keys' storage (--attention int8q scores quantized keys against an
  // int8 query): its element and parameter group (KIVI's keys: the block).
  KvElement keys = KvElement::F32;
  int key_group = 0;
  // Roofline (harness/bench/roofline.h), averaged over the test's token positions:
  // tg: weights + K/V read per decode step (a policy: its hot tier, restored
  // pages included, averaged over the first and the last step of a run)
  double bytes_per_token = 0;
  double flops_per_token = 0;  // pp: FLOPs per prompt token
  std::string test() const {
    std::string t = n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen);
    if (depth > 0) t += " @ d" + std::to_string(depth);
    if (batch > 1) t += " b" + std::to_string(batch);
    if (kv_memory > 0) t += " in " + format_bytes(kv_memory);
    return t;
  }
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

struct ModelInfo {
  std::string name;     // "llama 135M Q4_1", "gemma3 268M Q4_K_M"
  uint64_t bytes = 0;   // all tensors
  uint64_t params = 0;  // all tensor elements
  std::string backend;  // "CPU avx512" (+ " exact", " bf16-attn" or " bf16-attn (emulated)")
  // --attention int8q: said per row (backend_of), since whether it sums
  // integer products depends on the row's keys and the model's head size.
  bool int8_query = false;
  CpuPath path = CpuPath::Scalar;
  int head_dim = 0;
};

// A row's backend: the run's, and " int8q" where --attention int8q scored
// its keys with integer sums, " int8q (f32 sums)" where it quantized the
// query but the path, head size or group left the sums to f32 products
// (the same numbers, slower than f32: docs/PERFORMANCE.md); nothing for
// keys it does not apply to (f32 / f16 caches).
std::string backend_of(const ModelInfo& info, const Result& r) {
  const bool quantized = attn::q8_key(r.keys) || r.keys == KvElement::K2;
  if (!info.int8_query || !quantized) return info.backend;
  return info.backend + (q8_query_integer(info.path, r.keys, info.head_dim, r.key_group)
                             ? " int8q"
                             : " int8q (f32 sums)");
}

// The keys' element and group of a policy's store.
std::pair<KvElement, int> key_storage(const StoreConfig& c) {
  if (c.layout == StoreConfig::Layout::Kivi) {
    switch (c.kivi_keys) {
      case KiviKeys::Channel:
        return {KvElement::K2, c.kivi_group};
      case KiviKeys::Token:
        return {KvElement::Q2, c.kivi_group};
      case KiviKeys::F32:
        return {KvElement::F32, 0};
    }
  }
  // Rows: the storage codec; Mixed: the less important entries' codec.
  return {kv_element(c.codec.kind()), c.codec.group()};
}

// llama.cpp's names of general.file_type (llama_ftype), which llama-bench
// prints; empty for a value it does not name or a key of the wrong type.
std::string file_type_name(const GgufFile& f) {
  static const std::map<uint32_t, std::string> kNames = {
      {0, "all F32"}, {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},    {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"}, {14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},   {32, "BF16"}};
  try {
    const auto it = kNames.find(f.get_u32_or("general.file_type", UINT32_MAX));
    return it != kNames.end() ? it->second : "";
  } catch (const InputError&) {
    return "";
  }
}

ModelInfo model_info(const LlamaModel& m, bool exact, AttentionMode attention) {
  ModelInfo info;
  std::map<std::string, uint64_t> bytes_by_type;
  for (const GgufTensor& t : m.file().tensors()) {
    info.bytes += t.bytes;
    info.params += static_cast<uint64_t>(t.n_elements());
    const auto traits = type_traits(static_cast<uint32_t>(t.type));
    bytes_by_type[traits ? std::string(traits->name) : "?"] += t.bytes;
  }
  const auto main_type = std::max_element(bytes_by_type.begin(), bytes_by_type.end(),
                                          [](auto& a, auto& b) { return a.second < b.second; });
  // llama-bench's style: architecture, parameter count, the file's type
  // (general.file_type; else the type holding most bytes).
  const double p = static_cast<double>(info.params);
  const std::string size = p >= 1e9   ? fixed(p / 1e9, 1) + "B"
                           : p >= 1e7 ? fixed(p / 1e6, 0) + "M"
                                      : fixed(p / 1e6, 1) + "M";
  std::string type = file_type_name(m.file());
  if (type.empty() && main_type != bytes_by_type.end()) type = main_type->first;
  info.name = m.config().arch_name + " " + size + (type.empty() ? "" : " " + type);
  // Emulated bf16 (no AVX-512 BF16 on this CPU, or KVBENCH_CPU below
  // avx512): the same numbers at about f32 speed, so the row says so.
  const CpuPath path = default_cpu_path();
  const std::string bf16 = !attention.bf16               ? ""
                           : bf16_attention_native(path) ? " bf16-attn"
                                                         : " bf16-attn (emulated)";
  info.backend = "CPU " + std::string(cpu_path_name(path)) + (exact ? " exact" : "") + bf16;
  info.int8_query = attention.int8_query;
  info.path = path;
  info.head_dim = m.config().head_dim;
  return info;
}

void print_markdown(const ModelInfo& info, const std::vector<Result>& results) {
  const std::vector<std::string> head = {"model", "size", "params", "backend",   "threads",
                                         "kv",    "test", "t/s",    "median t/s"};
  std::vector<std::vector<std::string>> rows;
  for (const Result& r : results) {
    const Stats s = stats(r.tps);
    rows.push_back({info.name, fixed(info.bytes / 1048576.0, 2) + " MiB",
                    fixed(info.params / 1e6, 2) + " M", backend_of(info, r),
                    std::to_string(r.threads), r.kv, r.test(),
                    fixed(s.mean, 2) + " ± " + fixed(s.sd, 2), fixed(s.median, 2)});
  }
  std::vector<size_t> width(head.size());
  auto cells = [](const std::string& s) {  // display width: "±" is one column, two bytes
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = cells(head[c]);
    for (const auto& row : rows) width[c] = std::max(width[c], cells(row[c]));
  }
  // Names left-aligned, numbers and tests right-aligned (as llama-bench).
  auto right = [](size_t c) { return c == 1 || c == 2 || c == 4 || c >= 6; };
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - cells(row[c]), ' ');
      out += " " + (right(c) ? pad + row[c] : row[c] + pad) + " |";
    }
    std::cout << out << "\n";
  };
  line(head);
  std::string sep = "|";
  for (size_t c = 0; c < head.size(); ++c)
    sep +=
        " " + (right(c) ? std::string(width[c] - 1, '-') + ":" : std::string(width[c], '-')) + " |";
  std::cout << sep << "\n";
  for (const auto& row : rows) line(row);
}

// The limits (docs/PERFORMANCE.md): for tg, the measured read bandwidth over
// the bytes a step reads; for pp, the measured arithmetic peak of the
// instructions the mode multiplies with (f32 FMA for --exact, VNNI int8 dot
// products otherwise) over the operations a token needs.
void print_roofline(const std::map<int, BandwidthMeasurement>& bws,
                    const std::map<int, ComputePeak>& peaks, bool exact,
                    const std::vector<Result>& results) {
  std::cout << "\n";
  for (const auto& [threads, bw] : bws)
    std::cout << "roofline: read bandwidth " << fixed(bw.median_bytes_per_s / 1e9, 2)
              << " GB/s with " << threads << (threads == 1 ? " thread" : " threads")
              << " (median of " << bw.passes << " passes over " << bw.buffer_bytes / (1 << 20)
              << " MiB; best " << fixed(bw.best_bytes_per_s / 1e9, 2) << ")\n";
  const char* peak_name = exact ? "AVX-512 f32 FMA" : "AVX-512 VNNI int8";
  const char* unit = exact ? "GFLOP/s" : "G int ops/s";
  for (const auto& [threads, p] : peaks) {
    const double v = exact ? p.f32_flops_per_s : p.int8_ops_per_s;
    std::cout << "roofline: " << peak_name << " peak "
              << (v > 0 ? fixed(v / 1e9, 1) + " " + unit : "not measured (CPU lacks it)")
              << " with " << threads << (threads == 1 ? " thread" : " threads") << " (median of "
              << p.passes << " passes)\n";
  }
  std::cout
      << "\n| threads | kv  | test | per token | limit t/s | median t/s | of limit | achieved |\n";
  std::cout
      << "| ------: | --- | ---: | --------: | --------: | ---------: | -------: | -------: |\n";
  for (const Result& r : results) {
    const BandwidthMeasurement& bw = bws.at(r.threads);
    const double median = stats(r.tps).median;
    if (r.n_gen > 0) {
      const double limit = bw.median_bytes_per_s / r.bytes_per_token;
      std::cout << "| " << r.threads << " | " << r.kv << " | " << r.test() << " | "
                << fixed(r.bytes_per_token / 1e6, 2) << " MB | " << fixed(limit, 1) << " | "
                << fixed(median, 2) << " | " << fixed(100 * median / limit, 1) << "% | "
                << fixed(median * r.bytes_per_token / 1e9, 2) << " GB/s |\n";
    } else {
      const ComputePeak& p = peaks.at(r.threads);
      const double peak = exact ? p.f32_flops_per_s : p.int8_ops_per_s;
      const double limit = peak / r.flops_per_token;
      std::cout << "| " << r.threads << " | " << r.kv << " | " << r.test() << " | "
                << fixed(r.flops_per_token / 1e6, 1) << " M" << (exact ? "FLOP" : "op") << " | "
                << (peak > 0 ? fixed(limit, 1) : std::string("—")) << " | " << fixed(median, 2)
                << " | " << (peak > 0 ? fixed(100 * median / limit, 1) + "%" : std::string("—"))
                << " | " << fixed(median * r.flops_per_token / 1e9, 1) << " " << unit << " |\n";
    }
  }
}

nlohmann::json result_json(const ModelInfo& info, const std::string& path, const Result& r) {
  const Stats s = stats(r.tps);
  return {{"model", info.name},
          {"model_file", path},
          {"size_bytes", info.bytes},
          {"params", info.params},
          {"backend", backend_of(info, r)},
          {"threads", r.threads},
          {"kv", r.policy ? "" : r.kv},
          {"policy", r.policy ? r.kv : std::string(kReferencePolicy)},
          {"n_prompt", r.n_prompt},
          {"n_gen", r.n_gen},
          {"n_depth", r.depth},
          {"n_batch", r.batch},
          {"test", r.test()},
          {"repetitions", r.tps.size()},
          {"interleaved", r.interleaved},
          {"avg_ts", s.mean},
          {"stddev_ts", s.sd},
          {"median_ts", s.median},
          {"samples_ts", r.tps},
          {"bytes_per_token", r.bytes_per_token},
          {"flops_per_token", r.flops_per_token},
          {"kv_memory", r.kv_memory},
          {"kv_bytes_per_sequence", r.kv_bytes_per_sequence}};
}

void print_csv(const ModelInfo& info, const std::string& path, const std::vector<Result>& results) {
  const char* cols[] = {"model",
                        "model_file",
                        "size_bytes",
                        "params",
                        "backend",
                        "threads",
                        "kv",
                        "policy",
                        "n_prompt",
                        "n_gen",
                        "n_depth",
                        "n_batch",
                        "test",
                        "repetitions",
                        "avg_ts",
                        "stddev_ts",
                        "median_ts",
                        "samples_ts",
                        "bytes_per_token",
                        "flops_per_token",
                        "kv_memory",
                        "kv_bytes_per_sequence"};
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (size_t i = 0; i < std::size(cols); ++i) std::cout << (i ? "," : "") << cols[i];
  std::cout << "\n";
  for (const Result& r : results) {
    const nlohmann::json j = result_json(info, path, r);
    for (size_t i = 0; i < std::size(cols); ++i) {
      const nlohmann::json& v = j[cols[i]];
      std::string cell;
      if (v.is_string())
        cell = quote(v.get<std::string>());
      else if (v.is_array()) {
        std::string joined;
        for (const auto& x : v) joined += (joined.empty() ? "" : ";") + fixed(x.get<double>(), 4);
        cell = quote(joined);
      } else if (v.is_number_float())
        cell = fixed(v.get<double>(), 4);
      else
        cell = v.dump();
      std::cout << (i ? "," : "") << cell;
    }
    std::cout << "\n";
  }
}

// K/V bytes of `tokens` tokens of one sequence stored as `kv` (every layer
// and KV head, K and V).
uint64_t kv_bytes(const LlamaModel& model, KvElement kv, int64_t tokens) {
  const KvShape shape = model.kv_shape();
  return uint64_t{2} * shape.n_layers * shape.n_kv_heads * static_cast<uint64_t>(tokens) *
         kv_row_bytes(kv, shape.head_dim, 1);
}

// The most hot K/V bytes (codes and scales) one sequence holds during a tg
// test of n_gen steps after the depth context: the full cache's by its
// formula at depth + n_gen tokens; a policy's measured after every step of a
// run on a copy of base (a policy may hold the most mid-run).
uint64_t sequence_kv_bytes(Evaluator& eval, const LlamaModel& model, const CacheConfig& cfg,
                           int depth, int n_gen, PolicyCache* base) {
  if (!base) return kv_bytes(model, cfg.kv, depth + n_gen);
  auto hot = [](const PolicyCache& c) {
    const MemoryReport m = c.memory();
    return m.hot.kv + m.hot.scales;
  };
  auto work = base->clone();
  uint64_t most = hot(*work);
  const std::vector<int32_t> ids = bench_tokens(model.tokenizer(), n_gen, 2);
  std::vector<float> logits(model.config().n_vocab);
  for (int i = 0; i < n_gen; ++i) {
    const int32_t pos = work->position_for(0, depth + i);
    eval.step(std::span(&ids[i], 1), std::span(&pos, 1), 0, StepPhase::Decode, *work, Logits::Last,
              logits.data());
    most = std::max(most, hot(*work));
  }
  return most;
}

// About what one sequence of a batch holds (what check_batch_memory weighs):
// its K/V (the full cache as reserved, or the policy's whole state after the
// depth context plus n_gen tokens of f32 rows, the most a step can add) and
// its row of logits.
uint64_t batch_sequence_bytes(const LlamaModel& model, const CacheConfig& cfg, int depth,
                              int n_tokens, const PolicyCache* base) {
  const uint64_t logits = uint64_t{4} * model.config().n_vocab;
  if (!base) return kv_bytes(model, cfg.kv, depth + n_tokens) + logits;
  return base->memory().total() + kv_bytes(model, KvElement::F32, n_tokens) + logits;
}

// check_batch_memory for the tg test of n_gen steps at `batch` sequences.
void check_batch(const LlamaModel& model, const CacheConfig& cfg, int n_gen, int depth, int batch,
                 int n_tokens, const PolicyCache* base, uint64_t available) {
  const std::string test = "tg" + std::to_string(n_gen) +
                           (depth ? " @ d" + std::to_string(depth) : "") + " b" +
                           std::to_string(batch) + " (" + cfg.label + ")";
  check_batch_memory(test, batch, batch_sequence_bytes(model, cfg, depth, n_tokens, base),
                     available);
}

// One test (pp n_prompt or tg n_gen, at `batch` sequences) after the depth
// context: the full cache (rolled back by truncation) or a copy of the
// policy's cache after the context (base) for each run. Constructing it runs
// the warm-up; each repetition() is one timed run. Its state lives between
// repetitions so that several tests' repetitions can take turns.
class TimedTest {
 public:
  TimedTest(Evaluator& eval, const LlamaModel& model, const CacheConfig& cfg, int n_prompt,
            int n_gen, int depth, int batch, FullCache* full, PolicyCache* base, int max_test)
      : eval_(eval), full_(full), base_(base), depth_(depth), batch_(batch), max_test_(max_test) {
    const Tokenizer& tok = model.tokenizer();
    r_.threads = eval.n_threads();
    r_.kv = cfg.label;
    r_.policy = cfg.is_policy;
    r_.n_prompt = n_prompt;
    r_.n_gen = n_gen;
    r_.depth = depth;
    r_.batch = batch;
    if (base)
      std::tie(r_.keys, r_.key_group) = key_storage(base->store().config());
    else
      r_.keys = cfg.kv;
    // Averaged over the positions the test's tokens occupy; a batch reads the
    // weights once per step for its `batch` tokens, and each sequence's K/V.
    const double kv_elem = cfg.kv == KvElement::F16 ? 2.0 : 4.0;
    const double weights = decode_bytes_per_token(model, 0, 1, 0.0);
    if (n_gen > 0 && !cfg.is_policy)
      r_.bytes_per_token =
          decode_bytes_per_token(model, depth, n_gen, kv_elem) - weights + weights / batch;
    if (n_prompt > 0) r_.flops_per_token = prefill_flops_per_token(model, depth, n_prompt);
    // [batch] each sequence's tokens (sequence 0's are those of a b1 test).
    for (int b = 0; b < batch; ++b) ids_.push_back(bench_tokens(tok, n_prompt + n_gen, 2 + b));
    logits_.resize(static_cast<size_t>(model.config().n_vocab) * batch);
    rows_.resize(batch);
    // Warm-up: pages in the weights, grows every buffer to this shape (a
    // policy's tg: every step, to measure the bytes it reads).
    run(n_gen > 0 && cfg.is_policy ? n_gen : 1, cfg.is_policy);
    if (cfg.is_policy && n_gen > 0)
      r_.bytes_per_token = weights / batch + (hot_first_ + hot_last_) / 2.0;
  }

  // Times repetition i of reps (the progress line names it).
  void repetition(int i, int reps) {
    if (isatty(STDERR_FILENO))
      std::cerr << "bench: " << r_.test() << ", " << r_.threads << " threads, " << r_.kv
                << ": repetition " << i + 1 << "/" << reps << "      \r" << std::flush;
    const double s = run(r_.n_gen, false);
    r_.tps.push_back(static_cast<double>(r_.n_prompt + r_.n_gen) * batch_ / s);
  }

  Result take() { return std::move(r_); }

 private:
  // A policy's bytes read per step: hot K/V and scales, and the cold pages'
  // bounds restore ranks them by.
  static double hot(const PolicyCache& c) {
    const MemoryReport m = c.memory();
    return static_cast<double>(m.hot.kv + m.hot.scales) + c.restore_bytes_per_step();
  }

  // One run of the test (n_steps decode steps for tg); returns seconds.
  // measure: record a policy's hot bytes at the first and last step (the
  // warm-up only: the accounting walks the cache).
  double run(int n_steps, bool measure) {
    // The batch's caches at the depth context, made before the clock starts.
    std::vector<KvCache*> caches;
    works_.clear();
    fulls_.clear();
    if (full_) {
      full_->truncate(depth_);
      if (batch_ == 1) {
        caches.push_back(full_);
      } else {
        fulls_.assign(batch_, *full_);
        for (FullCache& f : fulls_) {
          f.reserve(depth_ + max_test_);
          caches.push_back(&f);
        }
      }
    } else {
      for (int b = 0; b < batch_; ++b) {
        works_.push_back(base_->clone());
        caches.push_back(works_.back().get());
      }
    }
    PolicyCache* work = works_.empty() ? nullptr : works_[0].get();
    const auto t0 = std::chrono::steady_clock::now();
    if (r_.n_prompt > 0) {
      bench_prefill(eval_, *caches[0], ids_[0], depth_, logits_.data());
      if (work) work->end_prefill();
    } else {
      for (int i = 0; i < n_steps; ++i) {
        if (batch_ == 1) {
          const int32_t pos = work ? work->position_for(0, depth_ + i) : depth_ + i;
          eval_.step(std::span(&ids_[0][i], 1), std::span(&pos, 1), 0, StepPhase::Decode,
                     *caches[0], Logits::Last, logits_.data());
        } else {
          for (int b = 0; b < batch_; ++b)
            rows_[b] = {ids_[b][i], caches[b]->position_for(0, depth_ + i), 0, caches[b]};
          eval_.step_batch(rows_, logits_.data());
        }
        if (measure && work && i == 0) hot_first_ = hot(*work);
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (measure && work && r_.n_gen > 0) hot_last_ = hot(*work);
    // The copies go between runs: tests taking turns (--interleave) hold one
    // batch's at a time, as check_batch assumes.
    works_.clear();
    fulls_.clear();
    return s;
  }

  Evaluator& eval_;
  FullCache* full_;
  PolicyCache* base_;
  int depth_, batch_, max_test_;
  Result r_;
  std::vector<std::vector<int32_t>> ids_;
  std::vector<float> logits_;
  double hot_first_ = 0, hot_last_ = 0;
  std::vector<FullCache> fulls_;                     // batch > 1: copies of *full_
  std::vector<std::unique_ptr<PolicyCache>> works_;  // copies of *base_
  std::vector<BatchToken> rows_;
};

// A configuration's cache after the depth context: the full cache (--kv),
// rolled back by truncation for each run, or a policy's, copied for each run.
struct DepthContext {
  std::unique_ptr<FullCache> full;
  std::unique_ptr<PolicyCache> base;
};

DepthContext prefill_context(Evaluator& eval, const LlamaModel& model, const CacheConfig& cfg,
                             int depth, int max_test) {
  DepthContext c;
  if (!cfg.is_policy) {
    c.full = std::make_unique<FullCache>(model.kv_shape(), cfg.kv);
    c.full->reserve(depth + max_test);
  } else {
    c.base = PolicyCache::create(cfg.spec, cache_context(model, depth + max_test));
  }
  if (depth > 0) {
    if (isatty(STDERR_FILENO))
      std::cerr << "bench: prefilling a context of " << depth << " tokens (" << cfg.label
                << ")...\r" << std::flush;
    const std::vector<int32_t> context = bench_tokens(model.tokenizer(), depth, 1);
    if (c.full) {
      bench_prefill(eval, *c.full, context, 0);
    } else {
      bench_prefill(eval, *c.base, context, 0);
      c.base->end_prefill();
    }
  }
  return c;
}

// One test's warm-up and its reps timed repetitions back to back.
Result run_test(Evaluator& eval, const LlamaModel& model, const CacheConfig& cfg, int n_prompt,
                int n_gen, int depth, int batch, int reps, FullCache* full, PolicyCache* base,
                int max_test) {
  TimedTest t(eval, model, cfg, n_prompt, n_gen, depth, batch, full, base, max_test);
  for (int i = 0; i < reps; ++i) t.repetition(i, reps);
  return t.take();
}

}  // namespace

int cmd_bench(const Args& args) {
  po::options_description desc("options (each takes a comma-separated list, like llama-bench)");
  desc.add_options()(
      "model,m", po::value<std::string>(),
      "GGUF model file (default: $KVBENCH_MODEL or models/SmolLM2-135M-Instruct.Q4_1.gguf)")(
      "n-prompt,p",
      po::value<std::vector<std::string>>()->composing()->default_value({"512"}, "512"),
      "prompt-processing test: N tokens in one prefill (0: none)")(
      "n-gen,n", po::value<std::vector<std::string>>()->composing()->default_value({"128"}, "128"),
      "token-generation test: N single-token decode steps (0: none)")(
      "n-depth,d", po::value<std::vector<std::string>>()->composing()->default_value({"0"}, "0"),
      "run each test after a context of D tokens")(
      "batch,b", po::value<std::vector<std::string>>()->composing()->default_value({"1"}, "1"),
      "tg tests: B sequences decode together, one step of B rows (llama-batched-bench's "
      "-npl); each sequence has its own copy of the depth context's cache, and t/s counts the "
      "tokens of all B; pp tests run at 1 only; B copies that would not fit in the memory "
      "available (MemAvailable) are refused before they are made")(
      "kv-memory", po::value<std::vector<std::string>>()->composing(),
      "tg tests under a memory cap instead of -b: B is the most sequences whose hot K/V (codes "
      "and scales, the most one sequence holds during the test; not an offloaded tier) fits in "
      "BYTES (512M, 1G, 1.5G: binary units), at most 1024")(
      "repetitions,r",
      po::value<std::vector<std::string>>()->composing()->default_value({"5"}, "5"),
      "timed repetitions of each test")("threads,t",
                                        po::value<std::vector<std::string>>()->composing(),
                                        "worker threads (default: all cores)")(
      "kv", po::value<std::vector<std::string>>()->composing()->default_value({"f16"}, "f16"),
      "KV precision of the full cache: f32, f16 (llama-bench's default is f16)")(
      "policy", po::value<std::vector<std::string>>()->composing(),
      "cache policy specs instead of --kv (any registry spec, `kvbench policies`; several "
      "separated by "
      "commas, e.g. full,h2o:budget=0.25,timing=call,full+int8): each test runs with the cache in "
      "that "
      "policy's state after the depth context")(
      "output,o", po::value<std::string>()->default_value("md"), "output format: md, csv, json")(
      "exact", po::bool_switch(),
      "multiply with f32 activations (the exact reference path) instead of activations quantized "
      "to 8 bits")(
      "attention", po::value<std::string>()->default_value("f32"),
      "attention's arithmetic (not with --exact): f32 (llama.cpp's), bf16 (prefill: Q, K, softmax "
      "weights and V rounded to bfloat16, f32 sums: about twice the f32 rate with AVX-512 BF16; "
      "the backend column says bf16-attn, or bf16-attn (emulated) where the CPU lacks AVX-512 "
      "BF16: the same numbers at about f32 speed), int8q (decode: scores of int8 / int4 / int2 "
      "keys against the query quantized to int8 per key group, and of KIVI's keys against "
      "the query times each token block's steps, integer dot products, as llama.cpp with a "
      "quantized K cache; the backend column says int8q on each row whose keys it sums as "
      "integers, int8q (f32 sums) where the path, head size or group leaves the sums to f32 "
      "products (the scalar path, KVBENCH_CPU=scalar or a CPU without AVX2; head sizes that are "
      "not multiples of 64; groups other than 32): the same numbers, slower than f32; and "
      "nothing on rows whose keys are f32 or f16) or bf16+int8q")(
      "interleave", po::bool_switch(),
      "run each test's repetitions in turns over the --kv or --policy configurations (A, B, C, "
      "A, B, C, ...) instead of one configuration's back to back, so that a machine's drift "
      "during the run reaches every configuration alike; every configuration's depth context "
      "is prefilled first and held at once (not with --kv-memory)")(
      "roofline", po::bool_switch(),
      "also measure the memory read bandwidth (1 GiB) and the arithmetic peaks (AVX-512 f32 FMA "
      "and VNNI int8, with each -t value's threads) and print each test against its limit: tg vs "
      "bandwidth / bytes read per token, pp vs the peak of the mode's instructions (f32 FMA with "
      "--exact, VNNI otherwise) / operations per token");
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench bench [-m PATH] [-p 512] [-n 128] [-d DEPTH] [-b BATCH] [-r REPS] [-t "
             "THREADS] [--kv "
             "f32|f16 | --policy SPEC] [-o md|csv|json]"))
    return 0;

  const int max_tokens = 1 << 20;
  const std::vector<int> prompts = int_list(vm, "n-prompt", 0, max_tokens);
  const std::vector<int> gens = int_list(vm, "n-gen", 0, max_tokens);
  const std::vector<int> depths = int_list(vm, "n-depth", 0, max_tokens);
  const std::vector<int> batches = int_list(vm, "batch", 1, 1024);
  std::vector<uint64_t> caps;
  if (vm.count("kv-memory")) {
    if (!vm["batch"].defaulted())
      throw InputError("--kv-memory and --batch exclude each other (the cap picks the batch)");
    for (const std::string& arg : vm["kv-memory"].as<std::vector<std::string>>()) {
      std::stringstream ss(arg);
      std::string item;
      while (std::getline(ss, item, ',')) caps.push_back(parse_byte_size(item, "--kv-memory"));
      if (arg.empty() || arg.back() == ',')
        throw InputError("--kv-memory: empty value in '" + arg + "'");
    }
  }
  const std::vector<int> reps_list = int_list(vm, "repetitions", 1, 10000);
  if (reps_list.size() != 1) throw InputError("--repetitions takes one value");
  const int reps = reps_list[0];
  std::vector<int> threads;
  if (vm.count("threads"))
    threads = int_list(vm, "threads", 1, 512);
  else
    threads = {static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  std::vector<CacheConfig> configs;
  const std::vector<std::string> policies = policy_list(vm);
  if (!policies.empty() && !vm["kv"].defaulted())
    throw InputError(
        "--kv and --policy exclude each other (a policy names its own storage: full+f16)");
  for (const std::string& p : policies) {
    CacheConfig c;
    c.is_policy = true;
    try {
      c.spec = parse_policy_spec(p);
    } catch (const std::exception& e) {
      throw InputError(std::string("--policy: ") + e.what());
    }
    c.label = p;
    configs.push_back(std::move(c));
  }
  if (policies.empty())
    for (KvElement kv : kv_list(vm)) configs.push_back({kv_name(kv), kv, false, {}});
  const std::string format = vm["output"].as<std::string>();
  if (format != "md" && format != "csv" && format != "json")
    throw InputError("--output: unknown format '" + format + "' (md, csv, json)");
  const bool exact = vm["exact"].as<bool>();
  const bool roofline = vm["roofline"].as<bool>();
  const bool interleave = vm["interleave"].as<bool>();
  if (interleave && !caps.empty())
    throw InputError(
        "--interleave and --kv-memory exclude each other (each cap picks its own "
        "batch per configuration)");
  const AttentionMode attention = attention_option(vm["attention"].as<std::string>(), exact);

  // Tests in llama-bench's order: every pp, then every tg; zeros skipped.
  struct Test {
    int n_prompt, n_gen;
  };
  std::vector<Test> tests;
  for (int p : prompts)
    if (p > 0) tests.push_back({p, 0});
  for (int n : gens)
    if (n > 0) tests.push_back({0, n});
  if (tests.empty()) throw InputError("nothing to measure: every -p and -n value is 0");

  const std::string path = vm.count("model") ? vm["model"].as<std::string>() : default_model_path();
  auto model = LlamaModel::load(path);
  const int n_ctx = model->config().n_ctx_train;
  for (int d : depths)
    for (const Test& t : tests)
      if (int64_t{d} + t.n_prompt + t.n_gen > n_ctx)
        throw InputError("--n-depth " + std::to_string(d) + " plus a test of " +
                         std::to_string(t.n_prompt + t.n_gen) +
                         " tokens exceeds the model's context of " + std::to_string(n_ctx));
  // Batches of the full cache are weighed before anything runs (a policy's,
  // once its depth context is in, below).
  const uint64_t available = available_memory_bytes();
  int max_test = 0;
  for (const Test& t : tests) max_test = std::max(max_test, t.n_prompt + t.n_gen);
  for (const CacheConfig& cfg : configs)
    if (!cfg.is_policy && caps.empty())
      for (int depth : depths)
        for (const Test& t : tests)
          for (int batch : batches)
            if (t.n_gen > 0)
              check_batch(*model, cfg, t.n_gen, depth, batch, max_test, nullptr, available);
  const ModelInfo info = model_info(*model, exact, attention);
  const bool tty = isatty(STDERR_FILENO);

  std::vector<Result> results;
  for (int n_threads : threads) {
    Evaluator eval(*model, n_threads, exact ? MatmulMode::Exact : MatmulMode::Quantized);
    apply_attention_mode(attention, eval);
    if (interleave) {
      // Every configuration's depth context first (all held at once), then
      // each test's repetitions in turns over the configurations.
      for (int depth : depths) {
        std::vector<DepthContext> contexts;
        for (const CacheConfig& cfg : configs) {
          if (!cfg.is_policy)  // this context beside those already made
            check_batch(*model, cfg, max_test, depth, 1, max_test, nullptr,
                        available_memory_bytes());
          contexts.push_back(prefill_context(eval, *model, cfg, depth, max_test));
        }
        for (const Test& t : tests)
          for (int batch : batches) {
            if (t.n_prompt > 0 && batch > 1) continue;  // pp runs at b1 only
            std::vector<std::unique_ptr<TimedTest>> turns;
            for (size_t c = 0; c < configs.size(); ++c) {
              if (t.n_gen > 0)
                check_batch(*model, configs[c], t.n_gen, depth, batch, max_test,
                            contexts[c].base.get(), available_memory_bytes());
              turns.push_back(std::make_unique<TimedTest>(
                  eval, *model, configs[c], t.n_prompt, t.n_gen, depth, batch,
                  contexts[c].full.get(), contexts[c].base.get(), max_test));
            }
            for (int i = 0; i < reps; ++i)
              for (auto& turn : turns) turn->repetition(i, reps);
            for (auto& turn : turns) {
              results.push_back(turn->take());
              results.back().interleaved = true;
            }
          }
      }
      continue;
    }
    for (const CacheConfig& cfg : configs) {
      for (int depth : depths) {
        DepthContext context = prefill_context(eval, *model, cfg, depth, max_test);
        FullCache* full = context.full.get();
        PolicyCache* base = context.base.get();
        if (base && caps.empty())
          for (const Test& t : tests)
            for (int batch : batches)
              if (t.n_gen > 0)
                check_batch(*model, cfg, t.n_gen, depth, batch, t.n_gen, base, available);
        for (const Test& t : tests) {
          if (t.n_gen > 0 && !caps.empty()) {
            const uint64_t per_seq = sequence_kv_bytes(eval, *model, cfg, depth, t.n_gen, base);
            for (uint64_t cap : caps) {
              const int batch = batch_for_memory(cap, per_seq, 1024);
              if (batch == 0) {
                std::cerr << "bench: " << cfg.label << " at depth " << depth << " holds "
                          << format_bytes(per_seq) << " per sequence: --kv-memory "
                          << format_bytes(cap) << " holds none (no row)\n";
                continue;
              }
              check_batch(*model, cfg, t.n_gen, depth, batch, max_test, base, available);
              Result r = run_test(eval, *model, cfg, t.n_prompt, t.n_gen, depth, batch, reps, full,
                                  base, max_test);
              r.kv_memory = cap;
              r.kv_bytes_per_sequence = per_seq;
              results.push_back(std::move(r));
            }
            continue;
          }
          for (int batch : batches) {
            if (t.n_prompt > 0 && batch > 1) continue;  // pp runs at b1 only
            results.push_back(run_test(eval, *model, cfg, t.n_prompt, t.n_gen, depth, batch, reps,
                                       full, base, max_test));
          }
        }
      }
    }
  }
  if (tty) std::cerr << std::string(72, ' ') << "\r" << std::flush;

  // Measured after the tests (so it cannot warm or cool anything they
  // read), once per thread count.
  std::map<int, BandwidthMeasurement> bw;
  std::map<int, ComputePeak> peaks;
  if (roofline) {
    for (int n : threads) {
      if (bw.count(n)) continue;
      if (tty)
        std::cerr << "bench: measuring the memory read bandwidth with " << n << " threads...\r"
                  << std::flush;
      ThreadPool pool(n);
      bw[n] = measure_read_bandwidth(pool);
      if (tty)
        std::cerr << "bench: measuring the arithmetic peaks with " << n << " threads...      \r"
                  << std::flush;
      peaks[n] = measure_compute_peak(pool);
    }
    if (tty) std::cerr << std::string(72, ' ') << "\r" << std::flush;
  }

  if (format == "md") {
    print_markdown(info, results);
    if (!bw.empty()) print_roofline(bw, peaks, exact, results);
  } else if (format == "csv") {
    print_csv(info, path, results);
  } else {
    nlohmann::json j = nlohmann::json::array();
    for (const Result& r : results) {
      j.push_back(result_json(info, path, r));
      if (!bw.empty()) {
        j.back()["read_bandwidth_bytes_per_s"] = bw.at(r.threads).median_bytes_per_s;
        j.back()["peak_f32_flops_per_s"] = peaks.at(r.threads).f32_flops_per_s;
        j.back()["peak_int8_ops_per_s"] = peaks.at(r.threads).int8_ops_per_s;
      }
    }
    std::cout << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace kvbench::cli
