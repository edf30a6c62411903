// kvbench perplexity: exp(mean negative log-likelihood) of a text file.
// The tokens are cut into windows of --ctx tokens, each evaluated from an
// empty cache in prefill chunks; in each window every prediction after the
// first --skip tokens is scored (default 0; llama-perplexity's convention,
// scoring only the second half of each window, is --skip ctx/2).
#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "harness/cli/cli.h"
#include "harness/perplexity.h"
#include "model/common/error.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "policies/policy_spec.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_perplexity(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("file,f", po::value<std::string>()->required(), "UTF-8 text file")(
      "ctx", po::value<int>()->default_value(512), "window length in tokens")(
      "skip", po::value<int>()->default_value(0),
      "unscored predictions at the start of each window (ctx/2 = llama-perplexity's convention)");
  add_chunk_option(desc);
  desc.add_options()("max-tokens", po::value<int64_t>()->default_value(0),
                     "use only the first N tokens (0 = all)")("json", po::bool_switch(),
                                                              "print the result as JSON");
  add_policy_option(
      desc, "cache policy spec (kvbench policies); the window streams through it chunk by chunk");
  desc.add_options()("seed", po::value<uint64_t>()->default_value(0), "cache seed (random policy)")(
      "beyond-context", po::bool_switch(),
      "allow --ctx past the model's training context (streaming experiments: a policy with "
      "contiguous positions keeps them inside it; others run positions the model never saw)");
  add_fast_option(desc);
  desc.add_options()(
      "attention", po::value<std::string>()->default_value("f32"),
      "attention's arithmetic with --fast: f32 (llama.cpp's), bf16 (prefill: Q, K, softmax weights "
      "and V rounded to bfloat16, f32 sums), int8q (one-token steps: scores of quantized keys "
      "against an int8 query) or bf16+int8q");
  po::variables_map vm;
  if (!parse(
          args, desc, vm,
          "kvbench perplexity --file TEXT [--ctx N] [--skip N] [--policy SPEC] [--beyond-context]"))
    return 0;
  PerplexityOptions o;
  o.ctx = vm["ctx"].as<int>();
  o.chunk = vm["chunk"].as<int>();
  o.skip = vm["skip"].as<int>();
  if (o.ctx < 2) throw InputError("--ctx must be >= 2");
  if (o.chunk < 1) throw InputError("--chunk must be >= 1");
  if (o.skip < 0 || o.skip >= o.ctx - 1) throw InputError("--skip must be in [0, ctx - 1)");
  if (vm["max-tokens"].as<int64_t>() < 0) throw InputError("--max-tokens must be >= 0");
  o.policy = policy_option(vm["policy"].as<std::string>());
  o.seed = vm["seed"].as<uint64_t>();
  const AttentionMode attention =
      attention_option(vm["attention"].as<std::string>(), !vm["fast"].as<bool>());
  const int threads = thread_count(vm);
  const std::string file = vm["file"].as<std::string>();
  const std::string text = read_text_file(file);
  // Windows of --ctx tokens, as llama-perplexity's -c: a LongRoPE file takes
  // its long factors past its original context.
  auto model = LlamaModel::load(model_path(vm), true, o.ctx);
  if (o.ctx > model->config().n_ctx_train) {
    if (!vm["beyond-context"].as<bool>())
      throw InputError(
          "--ctx " + std::to_string(o.ctx) + " is larger than the model's context of " +
          std::to_string(model->config().n_ctx_train) + " (--beyond-context allows it)");
    std::cerr << "note: --ctx " << o.ctx << " is past the model's training context of "
              << model->config().n_ctx_train << " tokens\n";
  }
  // As llama-perplexity: the stream starts with BOS when the vocabulary asks
  // for one (Gemma; not SmolLM2), and each window's first token becomes BOS.
  auto tokens = model->tokenizer().encode(text, /*add_bos=*/true, /*parse_special=*/false);
  const int64_t max_tokens = vm["max-tokens"].as<int64_t>();
  if (max_tokens > 0 && static_cast<int64_t>(tokens.size()) > max_tokens) tokens.resize(max_tokens);
  if (static_cast<int64_t>(tokens.size()) < o.ctx)
    throw InputError(file + ": has " + std::to_string(tokens.size()) +
                     " tokens, fewer than one window of --ctx " + std::to_string(o.ctx));
  o.bos_per_window = model->file().get_bool_or("tokenizer.ggml.add_bos_token", false);

  Evaluator eval(*model, threads,
                 vm["fast"].as<bool>() ? MatmulMode::Quantized : MatmulMode::Exact);
  apply_attention_mode(attention, eval);
  const bool tty = isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  const PerplexityResult r =
      perplexity(eval, tokens, o, [&](int64_t done, int64_t total, double ppl) {
        if (vm["json"].as<bool>()) return;
        std::cerr << (tty ? "\r" : "") << "window " << done << "/" << total << ", running ppl "
                  << std::fixed << std::setprecision(4) << ppl << (tty ? "   " : "\n")
                  << std::flush;
      });
  if (tty && !vm["json"].as<bool>()) std::cerr << "\n";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (vm["json"].as<bool>()) {
    nlohmann::json j = {{"file", file},
                        {"tokens", tokens.size()},
                        {"ctx", o.ctx},
                        {"skip", o.skip},
                        {"windows", r.windows},
                        {"scored", r.scored},
                        {"nll", r.nll},
                        {"ppl", r.ppl},
                        {"running_ppl", r.running_ppl},
                        {"chunk", o.chunk},
                        {"chunk_nll", r.chunk_nll},
                        {"seconds", seconds},
                        {"threads", threads},
                        {"policy", to_string(o.policy)},
                        {"policy_seconds", r.policy_seconds},
                        {"peak_hot_bytes", r.peak_hot_bytes},
                        {"memory", to_json(r.memory)}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "perplexity " << std::fixed << std::setprecision(4) << r.ppl << " over "
              << r.scored << " predictions (" << r.windows << " windows of " << o.ctx
              << " tokens, skip " << o.skip << "), " << std::setprecision(1)
              << (r.windows * o.ctx) / seconds << " tok/s\n"
              << "policy " << to_string(o.policy) << ": peak hot KV " << r.peak_hot_bytes
              << " bytes, policy time " << std::setprecision(2) << r.policy_seconds << " s\n";
  }
  return 0;
}

}  // namespace kvbench::cli
