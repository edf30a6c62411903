// Attention microbenchmarks on SmolLM2-135M's shape (9 query heads, 3 KV
// heads, head_dim 64) over the full cache: decode (one query token) at 512,
// 2048 and 8192 keys, prefill of 512 tokens at depth 0 and 4096; f32 and f16
// K/V. items/s = keys/s for decode (keys attended per KV head), query-key
// pairs/s for prefill; bytes/s = K/V bytes read per second (decode).
#include <benchmark/benchmark.h>

#include <numeric>
#include <random>
#include <vector>

#include "model/ops/attention.h"
#include "policies/full_cache.h"
#include "policies/policy_cache.h"

namespace kvbench {
namespace {

constexpr int kHeads = 9, kKvHeads = 3, kHeadDim = 64;

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = u(rng);
  return x;
}

// Commits `depth` tokens, then opens a step of n_new tokens (appended, not
// committed): the state attention sees in the middle of a forward step.
void fill(FullCache& cache, int depth, int n_new) {
  auto add = [&](int begin, int n, bool commit) {
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), begin);
    StepInfo info;
    info.positions = pos;
    cache.begin_step(info);
    const auto k = random_values(size_t(n) * kKvHeads * kHeadDim, begin + 1);
    const auto v = random_values(size_t(n) * kKvHeads * kHeadDim, begin + 2);
    cache.append(0, k.data(), v.data());
    if (commit) cache.end_step();
  };
  for (int b = 0; b < depth; b += 1024) add(b, std::min(1024, depth - b), true);
  add(depth, n_new, false);
}

KvElement element_arg(int64_t a) { return a ? KvElement::F16 : KvElement::F32; }

// Args: n_keys, f16 (0/1), threads.
void BM_DecodeAttention(benchmark::State& state) {
  const int n_keys = static_cast<int>(state.range(0));
  const KvElement e = element_arg(state.range(1));
  FullCache cache({1, kKvHeads, kHeads, kHeadDim}, e);
  fill(cache, n_keys - 1, 1);
  const auto q = random_values(kHeads * kHeadDim, 7);
  std::vector<float> out(kHeads * kHeadDim);
  ThreadPool pool(static_cast<int>(state.range(2)));
  AttentionScratch scratch;
  const int32_t pos = n_keys - 1;
  const AttentionShape shape{kHeads, kKvHeads, kHeadDim};
  for (auto _ : state) {
    attend(shape, 0, q.data(), std::span(&pos, 1), cache, out.data(), pool, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * int64_t{n_keys});
  state.SetBytesProcessed(state.iterations() * int64_t{n_keys} * kKvHeads * kHeadDim * 2 *
                          (e == KvElement::F16 ? 2 : 4));
  state.SetLabel(std::string(cpu_path_name(scratch.path)) +
                 (e == KvElement::F16 ? " f16" : " f32"));
}
BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"keys", "f16", "threads"})
    ->ArgsProduct({{512, 2048, 8192}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Decode attention of a whole SmolLM2 forward step: 30 layers, each with its
// own K/V (94 MB of f16 at 4096 keys, beyond the caches), layer after layer as
// in a decode step. Args: n_keys, f16 (0/1), threads; items = keys x layers.
void BM_DecodeAttention30Layers(benchmark::State& state) {
  constexpr int kLayers = 30;
  const int n_keys = static_cast<int>(state.range(0));
  const KvElement e = element_arg(state.range(1));
  FullCache cache({kLayers, kKvHeads, kHeads, kHeadDim}, e);
  std::vector<int32_t> pos(n_keys);
  std::iota(pos.begin(), pos.end(), 0);
  StepInfo info;
  info.positions = pos;
  cache.begin_step(info);  // one open step holding every key: views span all of them
  for (int l = 0; l < kLayers; ++l) {
    const auto k = random_values(size_t(n_keys) * kKvHeads * kHeadDim, 3 * l + 1);
    const auto v = random_values(size_t(n_keys) * kKvHeads * kHeadDim, 3 * l + 2);
    cache.append(l, k.data(), v.data());
  }
  const auto q = random_values(kHeads * kHeadDim, 7);
  std::vector<float> out(kHeads * kHeadDim);
  ThreadPool pool(static_cast<int>(state.range(2)));
  AttentionScratch scratch;
  const int32_t qpos = n_keys - 1;
  for (auto _ : state) {
    for (int l = 0; l < kLayers; ++l)
      attend({kHeads, kKvHeads, kHeadDim}, l, q.data(), std::span(&qpos, 1), cache, out.data(),
             pool, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * int64_t{n_keys} * kLayers);
  state.SetBytesProcessed(state.iterations() * int64_t{n_keys} * kLayers * kKvHeads * kHeadDim * 2 *
                          (e == KvElement::F16 ? 2 : 4));
  state.SetLabel(std::string(cpu_path_name(scratch.path)) +
                 (e == KvElement::F16 ? " f16" : " f32"));
}
BENCHMARK(BM_DecodeAttention30Layers)
    ->ArgNames({"keys", "f16", "threads"})
    ->ArgsProduct({{4096}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Decode attention of a whole forward step over a policy cache's storage
// (the full policy with each storage codec, read in place): 30 layers of
// 4096 keys, committed in steps of 512 (KIVI quantizes committed groups).
// Args: storage (0 f32, 1 f16, 2 int8, 3 int4, 4 kivi2), threads, q8 (the
// int8-query scores of quantized keys, AttentionShape::q8_query: 0 / 1).
void BM_DecodeAttentionStorage30Layers(benchmark::State& state) {
  constexpr int kLayers = 30, kKeys = 4096, kStep = 512;
  static const char* const kSpecs[] = {"full", "full+f16", "full+int8", "full+int4", "full+kivi2"};
  const char* spec = kSpecs[state.range(0)];
  CacheContext cc;
  cc.shape = {kLayers, kKvHeads, kHeads, kHeadDim};
  cc.context_tokens = kKeys;
  auto cache = PolicyCache::create(parse_policy_spec(spec), cc);
  for (int b = 0; b < kKeys; b += kStep) {
    std::vector<int32_t> pos(kStep);
    std::iota(pos.begin(), pos.end(), b);
    StepInfo info;
    info.positions = pos;
    cache->begin_step(info);
    for (int l = 0; l < kLayers; ++l) {
      const auto k = random_values(size_t(kStep) * kKvHeads * kHeadDim, 3 * l + b + 1);
      const auto v = random_values(size_t(kStep) * kKvHeads * kHeadDim, 3 * l + b + 2);
      cache->append(l, k.data(), v.data());
    }
    cache->end_step();
  }
  const auto q = random_values(kHeads * kHeadDim, 7);
  std::vector<float> out(kHeads * kHeadDim);
  ThreadPool pool(static_cast<int>(state.range(1)));
  AttentionScratch scratch;
  const int32_t qpos = kKeys;
  AttentionShape shape{kHeads, kKvHeads, kHeadDim};
  shape.q8_query = state.range(2) != 0;
  for (auto _ : state) {
    for (int l = 0; l < kLayers; ++l)
      attend(shape, l, q.data(), std::span(&qpos, 1), *cache, out.data(), pool, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * int64_t{kKeys} * kLayers);
  state.SetLabel(std::string(cpu_path_name(scratch.path)) + " " + spec +
                 (shape.q8_query ? " q8-query" : ""));
}
BENCHMARK(BM_DecodeAttentionStorage30Layers)
    ->ArgNames({"storage", "threads", "q8"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}, {0}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeAttentionStorage30Layers)
    ->ArgNames({"storage", "threads", "q8"})
    ->ArgsProduct({{2, 3, 4}, {1, 2}, {1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The scalar reference path, for the SIMD speed-up.
void BM_DecodeAttentionScalar(benchmark::State& state) {
  const int n_keys = static_cast<int>(state.range(0));
  FullCache cache({1, kKvHeads, kHeads, kHeadDim}, KvElement::F16);
  fill(cache, n_keys - 1, 1);
  const auto q = random_values(kHeads * kHeadDim, 7);
  std::vector<float> out(kHeads * kHeadDim);
  ThreadPool pool(1);
  AttentionScratch scratch;
  scratch.path = CpuPath::Scalar;
  const int32_t pos = n_keys - 1;
  for (auto _ : state) {
    attend({kHeads, kKvHeads, kHeadDim}, 0, q.data(), std::span(&pos, 1), cache, out.data(), pool,
           scratch);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * int64_t{n_keys});
}
BENCHMARK(BM_DecodeAttentionScalar)
    ->ArgNames({"keys"})
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Args: depth, f16 (0/1), threads; 512 new tokens.
// bf16: the bfloat16 products (AttentionShape::bf16; vdpbf16ps where the
// CPU has it). GFLOP/s counts 4 * head_dim flops per causal query-key pair
// and query head (Q.K and P.V multiply-adds).
void BM_PrefillAttention(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0)), n_tokens = 512;
  const KvElement e = element_arg(state.range(1));
  const bool bf16 = state.range(3) != 0;
  FullCache cache({1, kKvHeads, kHeads, kHeadDim}, e);
  fill(cache, depth, n_tokens);
  const auto q = random_values(size_t(n_tokens) * kHeads * kHeadDim, 8);
  std::vector<float> out(q.size());
  std::vector<int32_t> pos(n_tokens);
  std::iota(pos.begin(), pos.end(), depth);
  ThreadPool pool(static_cast<int>(state.range(2)));
  AttentionScratch scratch;
  AttentionShape shape{kHeads, kKvHeads, kHeadDim};
  shape.bf16 = bf16;
  for (auto _ : state) {
    attend(shape, 0, q.data(), pos, cache, out.data(), pool, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  // Causal query-key pairs per query head.
  const int64_t pairs = int64_t{n_tokens} * depth + int64_t{n_tokens} * (n_tokens + 1) / 2;
  state.SetItemsProcessed(state.iterations() * pairs);
  state.counters["GFLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * pairs * kHeads * 4.0 * kHeadDim * 1e-9,
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(cpu_path_name(scratch.path)) +
                 (e == KvElement::F16 ? " f16" : " f32") + (bf16 ? " bf16-products" : ""));
}
BENCHMARK(BM_PrefillAttention)
    ->ArgNames({"depth", "f16", "threads", "bf16"})
    ->ArgsProduct({{0, 4096}, {0, 1}, {1, 2}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvbench
