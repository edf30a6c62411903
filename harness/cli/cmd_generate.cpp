// kvbench generate: prompt -> streamed continuation (greedy unless a
// temperature is given), with prefill and decode speed on stderr.
#include <algorithm>
#include <chrono>
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/inference.h"
#include "harness/reconstruction.h"
#include "model/common/error.h"
#include "model/sampler.h"
#include "model/steps.h"
#include "policies/policy_cache.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_generate(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  add_prompt_options(desc);
  desc.add_options()("max-tokens,n", po::value<int>()->default_value(128),
                     "tokens to generate at most")(
      "temperature", po::value<float>()->default_value(0.0f), "0 = greedy")(
      "top-k", po::value<int>()->default_value(0), "keep the K most likely tokens (0 = all)")(
      "top-p", po::value<float>()->default_value(1.0f), "nucleus mass in (0, 1]")(
      "seed", po::value<uint64_t>()->default_value(0), "sampling seed");
  add_chunk_option(desc);
  add_policy_option(desc, "cache policy spec (kvbench policies)");
  add_fast_option(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench generate --prompt TEXT [--chat] [--max-tokens N] [options]"))
    return 0;
  SamplerConfig sc;
  sc.temperature = vm["temperature"].as<float>();
  sc.top_k = vm["top-k"].as<int>();
  sc.top_p = vm["top-p"].as<float>();
  sc.seed = vm["seed"].as<uint64_t>();
  const int max_tokens = vm["max-tokens"].as<int>();
  const int chunk = vm["chunk"].as<int>();
  if (!(sc.temperature >= 0.0f)) throw InputError("--temperature must be >= 0");
  if (sc.top_k < 0) throw InputError("--top-k must be >= 0");
  if (!(sc.top_p > 0.0f && sc.top_p <= 1.0f)) throw InputError("--top-p must be in (0, 1]");
  if (max_tokens < 0) throw InputError("--max-tokens must be >= 0");
  if (chunk < 1) throw InputError("--chunk must be >= 1");
  PolicySpec policy;
  try {
    policy = parse_policy_spec(vm["policy"].as<std::string>());
  } catch (const InputError& e) {
    throw InputError(std::string("--policy: ") + e.what());
  }
  const int threads = thread_count(vm);

  auto model = LlamaModel::load(model_path(vm));
  const auto ids = prompt_tokens(*model, vm["prompt"].as<std::string>(), vm["chat"].as<bool>());
  // A LongRoPE file past its original context takes its long factors.
  LlamaModel::reload_for_context(model, static_cast<int64_t>(ids.size()) + max_tokens);
  const LlamaConfig& c = model->config();
  Evaluator eval(*model, threads,
                 vm["fast"].as<bool>() ? MatmulMode::Quantized : MatmulMode::Exact);
  const CacheContext cc =
      cache_context(*model, static_cast<int64_t>(ids.size()) + max_tokens, sc.seed);
  auto cache_ptr = PolicyCache::create(policy, cc);
  PolicyCache& cache = *cache_ptr;
  Sampler sampler(sc);
  std::vector<float> logits(c.n_vocab);

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  prefill(eval, cache, ids, fixed_chunks(static_cast<int64_t>(ids.size()), chunk),
          {.last_logits = logits.data()});
  finish_prompt(eval, cache, ids, chunk);
  const auto t1 = clock::now();
  const double policy_prefill_s = cache.policy_seconds();
  const Decoded d = decode(
      eval, cache, logits,
      {.start = static_cast<int32_t>(ids.size()),
       .max_new_tokens = max_tokens,
       .n_ctx = c.n_ctx_train,
       .pick = [&](const float* l) { return sampler.sample(l, c.n_vocab); },
       .on_token =
           [&](int32_t t) { std::cout << model->tokenizer().token_to_piece(t) << std::flush; }});
  const int generated = static_cast<int>(d.tokens.size()), decode_steps = d.steps;
  const bool hit_context = d.hit_context;
  const auto t2 = clock::now();
  std::cout << "\n";
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  std::cerr << "prompt: " << ids.size() << " tokens, " << ids.size() / prefill_s
            << " tok/s; generated: " << generated << " tokens, decode "
            << (decode_steps > 0 ? decode_steps / decode_s : 0.0) << " tok/s; " << threads
            << " threads" << (hit_context ? "; stopped at the model's context length" : "") << "\n";
  const MemoryReport mem = cache.memory();
  std::cerr << "policy " << to_string(policy) << ": hot KV " << mem.hot.total() << " bytes ("
            << mem.hot.entries << " entries), cold " << mem.cold.total()
            << " bytes; time in policy " << 100.0 * policy_prefill_s / std::max(prefill_s, 1e-9)
            << "% of prefill, "
            << 100.0 * (cache.policy_seconds() - policy_prefill_s) / std::max(decode_s, 1e-9)
            << "% of decode\n";
  return 0;
}

}  // namespace kvbench::cli
