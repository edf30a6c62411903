// kvbench heads: a calibration file of per-head retrieval scores, for
// policies that treat retrieval and streaming heads apart (`duo:heads=FILE`).
// For each generated needle instance the full cache takes the prompt, the
// gold answer is teacher-forced through it, and each (layer, KV head) scores
// the share of the attention the answer pays to the needle's tokens (summed
// over the head's query heads and the answer's tokens); the file holds the
// mean over the instances, one "layer kv_head score" line per head.
// DuoAttention learns a gate per head on synthetic passkey data; this share
// is the measurable stand-in (docs/LITERATURE.md).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "datasets/prompt.h"
#include "datasets/tasks.h"
#include "harness/cli/cli.h"
#include "harness/inference.h"
#include "harness/run/answer.h"
#include "harness/run/cell_metrics.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/evaluator.h"
#include "model/llama_model.h"
#include "model/steps.h"
#include "policies/attention_recorder.h"
#include "policies/policy_cache.h"
#include "policies/registry.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_heads(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("output,o", po::value<std::string>()->required(), "the heads file to write")(
      "task", po::value<std::string>()->default_value("passkey"),
      "needle task of the instances (kvbench dataset generate --help)")(
      "length", po::value<int64_t>()->default_value(2048), "context tokens per instance")(
      "samples", po::value<int>()->default_value(8),
      "instances, their needles spread over depths 0.1 .. 0.9")(
      "seed", po::value<uint64_t>()->default_value(1), "instance seed");
  add_chunk_option(desc);
  add_fast_option(desc, "8-bit activations (default: f32, the exact path)");
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench heads -o FILE [--task passkey] [--length N] [--samples N]"))
    return 0;
  const int samples = vm["samples"].as<int>(), chunk = vm["chunk"].as<int>();
  if (samples < 1 || samples > 10000) throw InputError("--samples must be in [1, 10000]");
  if (chunk < 1) throw InputError("--chunk must be >= 1");
  const std::string out_path = vm["output"].as<std::string>();
  refuse_non_regular_target(out_path);
  // Fail before the calibration pass, not after it.
  const auto dir = std::filesystem::path(out_path).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir))
    throw InputError(out_path + ": cannot create (no directory " + dir.string() + ")");
  auto model = LlamaModel::load(model_path(vm));
  Evaluator eval(*model, thread_count(vm),
                 vm["fast"].as<bool>() ? MatmulMode::Quantized : MatmulMode::Exact);
  const KvShape& s = model->kv_shape();
  std::vector<double> share(static_cast<size_t>(s.n_layers) * s.n_kv_heads, 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < samples; ++i) {
    TaskRequest r{vm["task"].as<std::string>(), vm["length"].as<int64_t>(),
                  samples == 1 ? 0.5 : 0.1 + 0.8 * i / (samples - 1), i, vm["seed"].as<uint64_t>()};
    const Instance inst = generate_instance(r, model->tokenizer());
    const Prompt prompt = build_prompt(*model, inst);
    if (prompt.needle_tokens.empty() || prompt.needle_tokens[0].size() <= 0)
      throw InputError("--task " + r.task + ": its instances have no needle to attend to");
    const int64_t n = static_cast<int64_t>(prompt.tokens.size());
    auto full = PolicyCache::create(parse_policy_spec(kReferencePolicy),
                                    cache_context(*model, n, inst.seed));
    std::vector<float> logits(model->config().n_vocab);
    prefill(eval, *full, prompt.tokens, prefill_chunks(prompt, chunk),
            {.last_logits = logits.data()});
    full->end_prefill();
    AttentionRecorder recorder(*full);
    teacher_force(eval, recorder, logits, gold_answer_tokens(inst, model->tokenizer()),
                  static_cast<int32_t>(n));
    const auto tables = recorder.tables(n);
    const Span needle = prompt.needle_tokens[0];
    for (size_t h = 0; h < tables.size(); ++h) {
      double all = 0.0, on_needle = 0.0;
      for (int64_t t = 0; t < n; ++t) {
        all += tables[h][t];
        if (t >= needle.begin && t < needle.end) on_needle += tables[h][t];
      }
      share[h] += all > 0 ? on_needle / all / samples : 0.0;
    }
    if (isatty(STDERR_FILENO))
      std::cerr << "heads: " << (i + 1) << "/" << samples << " instances ("
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                << " s)\r" << std::flush;
  }
  if (isatty(STDERR_FILENO)) std::cerr << "\n";
  std::ostringstream text;
  text << "# kvbench heads: share of the gold answer's attention on the needle, mean over "
       << samples << " " << vm["task"].as<std::string>() << " instances of "
       << vm["length"].as<int64_t>() << " tokens (seed " << vm["seed"].as<uint64_t>() << ")\n"
       << "# layer kv_head score\n"
       << std::setprecision(9);
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_kv_heads; ++h)
      text << l << " " << h << " " << share[l * s.n_kv_heads + h] << "\n";
  write_file_atomic(out_path, text.str());
  std::cerr << "wrote " << out_path << " (" << s.n_layers * s.n_kv_heads << " heads)\n";
  return 0;
}

}  // namespace kvbench::cli
