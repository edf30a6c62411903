// kvbench ask: answer questions about a document from its cache snapshot
// (--cache, written by `kvbench cache save`) or from a fresh prefill of the
// document (--context: the reference the snapshot must reproduce). Each
// question runs on its own sequence sharing the document, and the cache
// returns to the document's state after each answer (harness/snapshot/document_qa.h).
#include <chrono>
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/inference.h"
#include "harness/sha256.h"
#include "harness/snapshot/document_qa.h"
#include "harness/snapshot/snapshot_file.h"
#include "harness/snapshot/snapshot_model.h"
#include "model/common/error.h"
#include "policies/registry.h"

namespace po = boost::program_options;
using nlohmann::ordered_json;

namespace kvbench::cli {

int cmd_ask(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("cache", po::value<std::string>(), "snapshot written by `kvbench cache save`")(
      "context,c", po::value<std::string>(), "instead of --cache: prefill this document now")(
      "question,q", po::value<std::vector<std::string>>()->required(),
      "a question (repeat for more)")(
      "answer-prefix", po::value<std::vector<std::string>>(),
      "text the answer starts with: once for every question, or once per question")(
      "max-tokens,n", po::value<int>()->default_value(32), "tokens to generate per answer at most")(
      "fast", po::bool_switch(), "8-bit activations (a snapshot must have been saved with --fast)")(
      "policy", po::value<std::string>(), "with --context: cache policy spec (default full)")(
      "chunk", po::value<int>(), "with --context: prefill chunk size (default 512)")(
      "preamble", po::value<std::string>(),
      "with --context: text of the user turn before the document")(
      "seed", po::value<uint64_t>(), "with --context: the random scorer's seed (default 0)")(
      "question-budget", po::value<std::string>()->default_value("added"),
      "added: the document keeps its budget and each question is added whole (nothing evicted "
      "after the "
      "document); shared: the policy keeps its budget, so the question displaces document entries")(
      "json", po::bool_switch(), "print document and answers as one JSON object")(
      "kept", po::bool_switch(),
      "with --json: the document's token ids, and per layer and KV head the document positions "
      "attention reads after compression and the key channels that are 0 in all of them (for "
      "cross-checks against other tools)");
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench ask (--cache DOC.kvc | --context FILE [--policy SPEC] [--chunk N] "
             "[--preamble TEXT]) "
             "--question TEXT [--question TEXT ...] [--answer-prefix TEXT ...] [--max-tokens N] "
             "[--question-budget added|shared] [--fast] [--json [--kept]]"))
    return 0;
  if (vm["kept"].as<bool>() && !vm["json"].as<bool>()) throw InputError("--kept: needs --json");
  const bool from_cache = vm.count("cache") > 0;
  if (from_cache == (vm.count("context") > 0))
    throw InputError("ask: give exactly one of --cache and --context");
  if (from_cache)
    for (const char* o : {"policy", "chunk", "preamble", "seed"})
      if (vm.count(o))
        throw InputError(std::string("--") + o + ": the snapshot fixes it (only with --context)");
  const auto questions = vm["question"].as<std::vector<std::string>>();
  std::vector<std::string> prefixes = vm.count("answer-prefix")
                                          ? vm["answer-prefix"].as<std::vector<std::string>>()
                                          : std::vector<std::string>{""};
  if (prefixes.size() == 1) prefixes.resize(questions.size(), prefixes[0]);
  if (prefixes.size() != questions.size())
    throw InputError("--answer-prefix: give it once, or once per question (" +
                     std::to_string(questions.size()) + ")");
  const std::string qb = vm["question-budget"].as<std::string>();
  if (qb != "added" && qb != "shared")
    throw InputError("--question-budget: 'added' or 'shared', got '" + qb + "'");
  const QuestionBudget question_budget =
      qb == "added" ? QuestionBudget::Added : QuestionBudget::Shared;
  const int max_tokens = vm["max-tokens"].as<int>();
  if (max_tokens < 0) throw InputError("--max-tokens must be >= 0");
  const MatmulMode mode = vm["fast"].as<bool>() ? MatmulMode::Quantized : MatmulMode::Exact;
  PolicySpec policy;
  try {
    policy = parse_policy_spec(vm.count("policy") ? vm["policy"].as<std::string>()
                                                  : std::string(kReferencePolicy));
  } catch (const InputError& e) {
    throw InputError(std::string("--policy: ") + e.what());
  }
  const int chunk = vm.count("chunk") ? vm["chunk"].as<int>() : 512;
  if (chunk < 1) throw InputError("--chunk must be >= 1");
  const std::string text = from_cache ? "" : read_text_file(vm["context"].as<std::string>());

  auto model = LlamaModel::load(model_path(vm));
  Evaluator eval(*model, thread_count(vm), mode);
  std::unique_ptr<PolicyCache> cache;
  SnapshotDocument doc;
  double doc_seconds = 0;
  SnapshotExpect expect;
  if (from_cache) {
    expect.model =
        model_identity(*model);  // hashes the model file (~0.1 s for 98 MB); not in the load time
    expect.activations = activations_name(mode);
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (from_cache) {
    doc = load_cache_snapshot(vm["cache"].as<std::string>(), expect, cache);
    // What a snapshot does not carry: the model's weights some parts read and
    // its attention's scale and soft-cap.
    cache->adopt_model(cache_context(*model, 0));
  } else {
    doc =
        document_prefix(*model, vm.count("preamble") ? vm["preamble"].as<std::string>() : "", text);
    doc.chunk = chunk;
    doc.activations = activations_name(mode);
    cache = document_cache(*model, policy, doc, vm.count("seed") ? vm["seed"].as<uint64_t>() : 0);
    prefill_document(eval, *cache, doc);
  }
  doc_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every suffix is encoded (and checked against the context) before any answer.
  std::vector<std::vector<int32_t>> suffixes;
  for (size_t i = 0; i < questions.size(); ++i)
    suffixes.push_back(question_suffix(*model, questions[i], prefixes[i]));

  // What attention reads of the document before any question: [layer][kv head] -> positions;
  // and the key channels that are 0 in every one of those entries (a policy that prunes
  // channels zeroes them; otherwise a channel is almost never 0 in every key).
  ordered_json kept = ordered_json::array();
  ordered_json zero_channels = ordered_json::array();
  if (vm["kept"].as<bool>()) {
    const KvShape& s = cache->shape();
    std::vector<float> k(s.head_dim), v(s.head_dim);
    for (int l = 0; l < s.n_layers; ++l) {
      ordered_json heads = ordered_json::array();
      ordered_json zero_heads = ordered_json::array();
      for (int h = 0; h < s.n_kv_heads; ++h) {
        std::vector<int64_t> at;
        std::vector<char> zero(s.head_dim, 1);
        for (int64_t t = 0; t < static_cast<int64_t>(doc.tokens.size()); ++t)
          if (cache->attends(l, h, t)) {
            at.push_back(t);
            if (!cache->store().find(l, h, static_cast<int32_t>(t), k.data(), v.data())) continue;
            for (int c = 0; c < s.head_dim; ++c) zero[c] = zero[c] && k[c] == 0.0f;
          }
        std::vector<int> channels;
        for (int c = 0; c < s.head_dim && !at.empty(); ++c)
          if (zero[c]) channels.push_back(c);
        heads.push_back(std::move(at));
        zero_heads.push_back(std::move(channels));
      }
      kept.push_back(std::move(heads));
      zero_channels.push_back(std::move(zero_heads));
    }
  }

  const PolicyCache::Checkpoint checkpoint = cache->checkpoint();
  ordered_json answers = ordered_json::array();
  for (size_t i = 0; i < questions.size(); ++i) {
    const int seq = 1 + static_cast<int>(i % (CacheStore::kMaxSeqs - 1));
    const DocumentAnswer a = answer_from_document(eval, *cache, checkpoint, doc, suffixes[i], seq,
                                                  max_tokens, question_budget);
    if (vm["json"].as<bool>()) {
      answers.push_back({{"question", questions[i]},
                         {"answer", a.text},
                         {"tokens", a.tokens},
                         {"suffix_ids", suffixes[i]},
                         {"stopped_at_eog", a.stopped_at_eog},
                         {"first_logits_sha256", a.first_logits_sha256},
                         {"prefill_seconds", a.prefill_seconds},
                         {"decode_seconds", a.decode_seconds}});
    } else {
      std::cout << "Q: " << questions[i] << "\nA: " << prefixes[i]
                << (prefixes[i].empty() ? "" : " ") << a.text << "\n";
    }
  }
  const MemoryReport mem = cache->memory();
  if (vm["json"].as<bool>()) {
    ordered_json d = {
        {"source", from_cache ? "cache" : "context"},
        {"path", from_cache ? vm["cache"].as<std::string>() : vm["context"].as<std::string>()},
        {"tokens", doc.tokens.size()},
        {"policy", to_string(cache->spec())},
        {"question_budget", qb},
        {"seconds", doc_seconds},
        {"memory_bytes", mem.total()},
        {"logits_sha256", sha256_hex(doc.logits.data(), doc.logits.size() * sizeof(float))}};
    if (vm["kept"].as<bool>()) {
      d["token_ids"] = doc.tokens;
      d["kept"] = std::move(kept);
      d["zero_key_channels"] = std::move(zero_channels);
    }
    // Answers may end inside a multi-byte character: replace broken UTF-8.
    std::cout << ordered_json{{"document", d}, {"answers", answers}}.dump(
                     -1, ' ', false, ordered_json::error_handler_t::replace)
              << "\n";
  } else {
    std::cerr << "document: " << doc.tokens.size() << " tokens, policy " << to_string(cache->spec())
              << ", " << (from_cache ? "loaded in " : "prefilled in ") << doc_seconds
              << " s; KV in memory " << mem.total() << " bytes\n";
  }
  return 0;
}

}  // namespace kvbench::cli
