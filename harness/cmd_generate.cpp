// kvbench generate: prompt -> streamed continuation (greedy unless a
// temperature is given), with prefill and decode speed on stderr.
#include <chrono>
#include <iostream>

#include "harness/cli.h"
#include "harness/inference.h"
#include "model/error.h"
#include "model/sampler.h"
#include "policies/full_cache.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_generate(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("prompt,p", po::value<std::string>()->required(), "prompt text")(
      "chat", po::bool_switch(), "wrap the prompt in the model's chat template")(
      "max-tokens,n", po::value<int>()->default_value(128), "tokens to generate at most")(
      "temperature", po::value<float>()->default_value(0.0f), "0 = greedy")(
      "top-k", po::value<int>()->default_value(0), "keep the K most likely tokens (0 = all)")(
      "top-p", po::value<float>()->default_value(1.0f), "nucleus mass in (0, 1]")(
      "seed", po::value<uint64_t>()->default_value(0), "sampling seed")(
      "chunk", po::value<int>()->default_value(512), "prefill chunk size in tokens")(
      "policy", po::value<std::string>()->default_value("full"), "cache policy (today: full)");
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
  if (vm["policy"].as<std::string>() != "full")
    throw InputError("--policy: unknown policy '" + vm["policy"].as<std::string>() +
                     "' (available: full)");
  const int threads = thread_count(vm);

  auto model = LlamaModel::load(model_path(vm));
  const auto ids = prompt_tokens(*model, vm["prompt"].as<std::string>(), vm["chat"].as<bool>());
  const LlamaConfig& c = model->config();
  Evaluator eval(*model, threads);
  FullCache cache(model->kv_shape());
  Sampler sampler(sc);
  std::vector<float> logits(c.n_vocab);

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  prefill(eval, cache, ids, 0, chunk, logits.data());
  const auto t1 = clock::now();
  int generated = 0, decode_steps = 0;
  int32_t pos = static_cast<int32_t>(ids.size());
  bool hit_context = false;
  while (generated < max_tokens) {
    const int32_t next = sampler.sample(logits.data(), c.n_vocab);
    if (model->tokenizer().is_end_of_generation(next)) break;
    std::cout << model->tokenizer().token_to_piece(next) << std::flush;
    ++generated;
    if (generated == max_tokens) break;
    if (pos >= c.n_ctx_train) {
      hit_context = true;
      break;
    }
    const int32_t tok[1] = {next}, p[1] = {pos++};
    eval.step(tok, p, 0, StepPhase::Decode, cache, Logits::Last, logits.data());
    ++decode_steps;
  }
  const auto t2 = clock::now();
  std::cout << "\n";
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  std::cerr << "prompt: " << ids.size() << " tokens, " << ids.size() / prefill_s
            << " tok/s; generated: " << generated << " tokens, decode "
            << (decode_steps > 0 ? decode_steps / decode_s : 0.0) << " tok/s; " << threads
            << " threads" << (hit_context ? "; stopped at the model's context length" : "") << "\n";
  return 0;
}

}  // namespace kvbench::cli
