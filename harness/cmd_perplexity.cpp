// kvbench perplexity: exp(mean negative log-likelihood) of a text file.
// The tokens are cut into windows of --ctx tokens, each evaluated from an
// empty cache in prefill chunks; in each window every prediction after the
// first --skip tokens is scored (--skip defaults to 0; llama-perplexity's
// convention, scoring only the second half of each window, is --skip ctx/2).
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "harness/cli.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "model/error.h"
#include "policies/full_cache.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_perplexity(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("file,f", po::value<std::string>()->required(), "UTF-8 text file")(
      "ctx", po::value<int>()->default_value(512), "window length in tokens")(
      "skip", po::value<int>()->default_value(-1), "unscored predictions at the start of each window (default 0)")(
      "chunk", po::value<int>()->default_value(512), "prefill chunk size in tokens")(
      "max-tokens", po::value<int64_t>()->default_value(0), "use only the first N tokens (0 = all)")(
      "json", po::bool_switch(), "print the result as JSON")(
      "policy", po::value<std::string>()->default_value("full"), "cache policy (today: full)");
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench perplexity --file TEXT [--ctx N] [--skip N]")) return 0;
  const int ctx = vm["ctx"].as<int>();
  const int chunk = vm["chunk"].as<int>();
  int skip = vm["skip"].as<int>();
  if (skip < 0) skip = 0;
  if (ctx < 2) throw InputError("--ctx must be >= 2");
  if (chunk < 1) throw InputError("--chunk must be >= 1");
  if (skip >= ctx - 1) throw InputError("--skip must be smaller than --ctx - 1");
  if (vm["policy"].as<std::string>() != "full")
    throw InputError("--policy: unknown policy '" + vm["policy"].as<std::string>() + "' (available: full)");
  const int threads = thread_count(vm);
  const std::string text = read_text_file(vm["file"].as<std::string>());
  auto model = LlamaModel::load(model_path(vm));
  if (ctx > model->config().n_ctx_train)
    throw InputError("--ctx " + std::to_string(ctx) + " is larger than the model's context of " +
                     std::to_string(model->config().n_ctx_train));
  auto tokens = model->tokenizer().encode(text, /*add_bos=*/false, /*parse_special=*/false);
  if (vm["max-tokens"].as<int64_t>() > 0 && static_cast<int64_t>(tokens.size()) > vm["max-tokens"].as<int64_t>())
    tokens.resize(vm["max-tokens"].as<int64_t>());
  const int64_t n_windows = static_cast<int64_t>(tokens.size()) / ctx;
  if (n_windows < 1)
    throw InputError(vm["file"].as<std::string>() + ": has " + std::to_string(tokens.size()) +
                     " tokens, fewer than one window of --ctx " + std::to_string(ctx));

  const int n_vocab = model->config().n_vocab;
  Evaluator eval(*model, threads);
  FullCache cache(model->kv_shape());
  std::vector<float> logits(static_cast<size_t>(chunk) * n_vocab);
  std::vector<int32_t> window, pos;
  double nll = 0.0;
  int64_t scored = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t w = 0; w < n_windows; ++w) {
    // Each window starts from BOS when the vocabulary uses one.
    window.assign(tokens.begin() + w * ctx, tokens.begin() + (w + 1) * ctx);
    const int32_t bos = model->tokenizer().bos();
    const bool add_bos = bos >= 0 && model->file().get_bool_or("tokenizer.ggml.add_bos_token", false);
    if (add_bos) window[0] = bos;
    cache.clear();
    for (int64_t b = 0; b < ctx; b += chunk) {
      const int64_t e = std::min<int64_t>(ctx, b + chunk);
      pos.resize(e - b);
      std::iota(pos.begin(), pos.end(), static_cast<int32_t>(b));
      eval.step(std::span<const int32_t>(window.data() + b, e - b), pos, 0, StepPhase::Prefill, cache,
                Logits::All, logits.data());
      for (int64_t i = b; i < e && i + 1 < ctx; ++i) {
        if (i < skip) continue;
        const float* row = logits.data() + (i - b) * n_vocab;
        float max = row[0];
        for (int v = 1; v < n_vocab; ++v) max = std::max(max, row[v]);
        double sum = 0.0;
        for (int v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
        nll += (max + std::log(sum)) - row[window[i + 1]];
        ++scored;
      }
    }
    if (!vm["json"].as<bool>())
      std::cerr << "\rwindow " << w + 1 << "/" << n_windows << ", running ppl "
                << std::exp(nll / scored) << "   " << std::flush;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ppl = std::exp(nll / scored);
  if (vm["json"].as<bool>()) {
    nlohmann::json j = {{"file", vm["file"].as<std::string>()}, {"tokens", tokens.size()},
                        {"ctx", ctx}, {"skip", skip}, {"windows", n_windows},
                        {"scored", scored}, {"nll", nll / scored}, {"ppl", ppl},
                        {"seconds", seconds}, {"policy", vm["policy"].as<std::string>()}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cerr << "\n";
    std::cout << "perplexity " << std::fixed << std::setprecision(4) << ppl << " over " << scored
              << " predictions (" << n_windows << " windows of " << ctx << " tokens, skip " << skip
              << "), " << std::setprecision(1) << (n_windows * ctx) / seconds << " tok/s\n";
  }
  return 0;
}

}  // namespace kvbench::cli
