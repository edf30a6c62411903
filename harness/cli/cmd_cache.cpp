// kvbench cache save | info: prefill a document once (compressing it when a
// policy is given) and write the complete cache state to a snapshot file;
// show a snapshot's metadata, sizes per tier and compression ratio.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "harness/cli/cli.h"
#include "harness/snapshot/document_qa.h"
#include "harness/snapshot/snapshot_file.h"
#include "harness/snapshot/snapshot_model.h"
#include "model/common/error.h"
#include "policies/registry.h"

namespace po = boost::program_options;
using nlohmann::ordered_json;

namespace kvbench::cli {
namespace {

constexpr const char* kUsage =
    "kvbench cache save --context FILE [--policy SPEC] [--chunk N] [--preamble TEXT] [--fast] "
    "[--compression zstd|gzip] [--level N] -o DOC.kvc\n"
    "       kvbench cache info DOC.kvc [--json]";

std::string thousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

int cache_save(const Args& args) {
  po::options_description desc("options");
  add_model_options(desc);
  desc.add_options()("context,c", po::value<std::string>()->required(),
                     "the document: a UTF-8 text file")(
      "output,o", po::value<std::string>()->required(), "snapshot file to write (atomically)");
  add_policy_option(desc,
                    "cache policy spec (kvbench policies); after-prefill policies compress at the "
                    "end of the document");
  add_chunk_option(desc, "prefill chunk size in tokens (questions continue with it)");
  desc.add_options()("preamble", po::value<std::string>()->default_value(""),
                     "text of the user turn before the document")(
      "seed", po::value<uint64_t>()->default_value(0), "the random scorer's seed");
  add_fast_option(desc, "8-bit activations (ask must use --fast too); default: exact f32");
  desc.add_options()("compression", po::value<std::string>()->default_value("zstd"),
                     "zstd or gzip")("level", po::value<int>(),
                                     "compression level (default: zstd 3, gzip 6)")(
      "json", po::bool_switch(), "print the summary as JSON");
  po::variables_map vm;
  if (!parse(args, desc, vm, kUsage)) return 0;
  const std::string out_path = vm["output"].as<std::string>();
  SnapshotOptions so;
  so.compression = parse_compression(vm["compression"].as<std::string>());
  so.level = vm.count("level")                             ? vm["level"].as<int>()
             : so.compression == SnapshotCompression::Zstd ? 3
                                                           : 6;
  const int chunk = vm["chunk"].as<int>();
  if (chunk < 1) throw InputError("--chunk must be >= 1");
  const PolicySpec policy = policy_option(vm["policy"].as<std::string>());
  const std::string context_path = vm["context"].as<std::string>();
  const std::string text = read_text_file(context_path);
  const MatmulMode mode = vm["fast"].as<bool>() ? MatmulMode::Quantized : MatmulMode::Exact;

  auto model = LlamaModel::load(model_path(vm));
  SnapshotDocument doc = document_prefix(*model, vm["preamble"].as<std::string>(), text);
  doc.chunk = chunk;
  doc.activations = activations_name(mode);
  auto cache = document_cache(*model, policy, doc, vm["seed"].as<uint64_t>());
  const ModelIdentity identity = model_identity(*model);
  Evaluator eval(*model, thread_count(vm), mode);
  const double prefill_s = prefill_document(eval, *cache, doc);

  const auto t0 = std::chrono::steady_clock::now();
  save_cache_snapshot(out_path, *cache, doc, identity, so);
  const double save_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SnapshotInfo info = read_snapshot_info(out_path);
  const MemoryReport mem = cache->memory();
  ordered_json j = {{"file", out_path},
                    {"tokens", doc.tokens.size()},
                    {"policy", to_string(policy)},
                    {"prefill_seconds", prefill_s},
                    {"save_seconds", save_s},
                    {"file_bytes", info.file_bytes},
                    {"memory_bytes", mem.total()},
                    {"payload_bytes", info.header["payload"]["bytes"]},
                    {"raw_bytes", info.header["payload"]["raw_bytes"]}};
  if (vm["json"].as<bool>()) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << out_path << ": " << doc.tokens.size() << " tokens, policy " << to_string(policy)
              << ", " << thousands(info.file_bytes) << " bytes (cache in memory "
              << thousands(mem.total()) << " bytes); prefill " << prefill_s << " s, save " << save_s
              << " s\n";
  }
  return 0;
}

void print_tier(std::ostream& os, const char* name, const ordered_json& t) {
  os << "  " << name << std::string(8 - std::string(name).size(), ' ')
     << thousands(t["kv"].get<uint64_t>() + t["scales"].get<uint64_t>() + t["meta"].get<uint64_t>())
     << " bytes (K/V " << thousands(t["kv"].get<uint64_t>()) << ", scales "
     << thousands(t["scales"].get<uint64_t>()) << ", metadata "
     << thousands(t["meta"].get<uint64_t>()) << "; " << thousands(t["entries"].get<uint64_t>())
     << " entries)\n";
}

int cache_info(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "snapshot file")(
      "json", po::bool_switch(), "the header as JSON, with file size and ratios");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse(args, desc, vm, kUsage, &pos)) return 0;
  const std::string path = vm["file"].as<std::string>();
  const SnapshotInfo info = read_snapshot_info(path);
  const ordered_json& h = info.header;
  // The header is only checksummed here, not validated against a payload:
  // read fields defensively.
  ordered_json j = h;
  try {
    const double raw = h.at("payload").at("raw_bytes").get<double>();
    const double packed = h.at("payload").at("bytes").get<double>();
    const double memory = h.at("memory").at("total").get<double>();
    j["file_bytes"] = info.file_bytes;
    j["compression_ratio"] = packed > 0 ? raw / packed : 0.0;
    j["file_vs_memory"] = memory > 0 ? static_cast<double>(info.file_bytes) / memory : 0.0;
    if (vm["json"].as<bool>()) {
      std::cout << j.dump(1) << "\n";
      return 0;
    }
    const auto& m = h.at("model");
    const auto& d = h.at("document");
    const auto& p = h.at("policy");
    std::cout << path << ": kvbench cache snapshot, format " << h.at("format_version")
              << " (kvbench " << h.at("kvbench_version").get<std::string>() << ")\n";
    std::cout << "model       sha256 " << m.at("sha256").get<std::string>() << ", "
              << thousands(m.at("bytes").get<uint64_t>()) << " bytes; " << m.at("n_layers")
              << " layers, " << m.at("n_heads") << " heads / " << m.at("n_kv_heads")
              << " KV heads, head_dim " << m.at("head_dim") << ", vocabulary " << m.at("n_vocab")
              << "\n";
    std::cout << "tokenizer   " << h.at("tokenizer").at("fingerprint").get<std::string>() << "\n";
    std::cout << "document    " << d.at("tokens") << " tokens (the context from token "
              << d.at("context_begin") << "), chunk " << d.at("chunk") << ", next-token logits "
              << (d.at("logits").get<int64_t>() ? "kept" : "absent") << "\n";
    std::cout << "policy      " << p.at("spec").get<std::string>() << " (context "
              << p.at("context_tokens") << " tokens, seed " << p.at("seed") << ")\n";
    std::cout << "precision   KV " << h.at("precision").at("kv").get<std::string>()
              << ", activations " << h.at("precision").at("activations").get<std::string>() << "\n";
    std::cout << "memory      " << thousands(h.at("memory").at("total").get<uint64_t>())
              << " bytes\n";
    print_tier(std::cout, "hot", h.at("memory").at("hot"));
    print_tier(std::cout, "cold", h.at("memory").at("cold"));
    std::cout << "  policy  " << thousands(h.at("memory").at("policy_state").get<uint64_t>())
              << " bytes (kept queries, importance tables)\n";
    char ratio[128];
    std::snprintf(ratio, sizeof ratio, "compression ratio %.3f, file / memory %.3f",
                  j["compression_ratio"].get<double>(), j["file_vs_memory"].get<double>());
    std::cout << "file        " << thousands(info.file_bytes) << " bytes: payload "
              << h.at("payload").at("compression").get<std::string>() << " "
              << thousands(static_cast<uint64_t>(packed)) << " bytes from "
              << thousands(static_cast<uint64_t>(raw)) << "; " << ratio << "\n";
  } catch (const nlohmann::json::exception& e) {
    throw SnapshotError(path + ": header: " + e.what());
  }
  return 0;
}

}  // namespace

int cmd_cache(const Args& args) {
  if (args.empty()) throw InputError("cache: a subcommand is required (save, info)");
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout
        << "usage: " << kUsage << "\n\n"
        << "  save   prefill a document (and compress it, with a policy) and write a snapshot\n"
        << "  info   a snapshot's metadata, sizes per tier and compression ratio\n"
        << "(kvbench cache save --help, kvbench cache info --help for options)\n";
    return 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "save") return cache_save(rest);
  if (args[0] == "info") return cache_info(rest);
  throw InputError("cache: unknown subcommand '" + args[0] + "' (valid: save, info)");
}

}  // namespace kvbench::cli
