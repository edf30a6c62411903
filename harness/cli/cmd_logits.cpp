// kvbench logits: the next-token distribution after a prompt — the top K
// tokens with logit and probability, as text or JSON.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "harness/cli/cli.h"
#include "harness/inference.h"
#include "model/common/error.h"
#include "model/steps.h"
#include "policies/policy_cache.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_logits(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  add_prompt_options(desc);
  desc.add_options()("top", po::value<int>()->default_value(10), "how many tokens to list")(
      "json", po::bool_switch(),
      "JSON output (ids, top list, and the full logit vector with --all)")(
      "all", po::bool_switch(), "with --json: include every logit");
  add_chunk_option(desc);
  add_fast_option(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench logits --prompt TEXT [--top K] [--json]")) return 0;
  const int top = vm["top"].as<int>();
  if (top < 1) throw InputError("--top must be >= 1");
  if (vm["chunk"].as<int>() < 1) throw InputError("--chunk must be >= 1");
  const int threads = thread_count(vm);
  auto model = LlamaModel::load(model_path(vm));
  const auto ids = prompt_tokens(*model, vm["prompt"].as<std::string>(), vm["chat"].as<bool>());
  // A LongRoPE file past its original context takes its long factors.
  LlamaModel::reload_for_context(model, static_cast<int64_t>(ids.size()));
  const int n_vocab = model->config().n_vocab;
  Evaluator eval(*model, threads,
                 vm["fast"].as<bool>() ? MatmulMode::Quantized : MatmulMode::Exact);
  auto cache = PolicyCache::create(parse_policy_spec(kReferencePolicy),
                                   cache_context(*model, static_cast<int64_t>(ids.size())));
  std::vector<float> logits(n_vocab);
  prefill(eval, *cache, ids, fixed_chunks(static_cast<int64_t>(ids.size()), vm["chunk"].as<int>()),
          {.last_logits = logits.data()});

  // log-softmax in double for the probabilities.
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  const double log_z = max + std::log(sum);
  std::vector<int32_t> order(n_vocab);
  std::iota(order.begin(), order.end(), 0);
  const int k = std::min(top, n_vocab);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  if (vm["json"].as<bool>()) {
    nlohmann::json j;
    j["ids"] = ids;
    j["top"] = nlohmann::json::array();
    for (int i = 0; i < k; ++i) {
      const int32_t id = order[i];
      j["top"].push_back({{"id", id},
                          {"piece", model->tokenizer().token_to_piece(id, true)},
                          {"logit", logits[id]},
                          {"prob", std::exp(logits[id] - log_z)}});
    }
    if (vm["all"].as<bool>()) j["logits"] = logits;
    std::cout << j.dump(vm["all"].as<bool>() ? -1 : 2, ' ', false,
                        nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  std::cout << "prompt: " << ids.size() << " tokens\n";
  std::cout << "  rank      id       logit      prob  piece\n";
  for (int i = 0; i < k; ++i) {
    const int32_t id = order[i];
    std::cout << std::setw(6) << i + 1 << std::setw(8) << id << std::setw(12) << std::fixed
              << std::setprecision(4) << logits[id] << std::setw(10) << std::exp(logits[id] - log_z)
              << "  '" << model->tokenizer().token_to_piece(id, true) << "'\n";
  }
  return 0;
}

}  // namespace kvbench::cli
