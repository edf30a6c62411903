// kvbench tiny-model: writes a random-weight GGUF: the project's tiny model
// of any architecture kvbench runs (the unit tests' model, and the files the
// architecture checks against llama.cpp use), or, with --shape, a file of a
// real model's shape for speed measurements.
#include <cstdio>
#include <iostream>

#include "harness/cli/cli.h"
#include "model/common/error.h"
#include "model/common/printable.h"
#include "model/testing/shaped_model.h"
#include "model/testing/tiny_model.h"

namespace po = boost::program_options;

namespace kvbench::cli {
namespace {

std::string real_shape_names() {
  std::string names;
  for (const ModelShape& s : model_shapes()) names += (names.empty() ? "" : ", ") + s.name;
  return names;
}

std::string type_names() {
  std::string names;
  for (std::string_view t : shaped_weight_type_names())
    names += (names.empty() ? "" : ", ") + std::string(t);
  return names;
}

}  // namespace

int cmd_tiny_model(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("output,o", po::value<std::string>()->required(), "output GGUF path")(
      "shape", po::value<std::string>()->default_value("tiny"),
      "tiny (3 layers, the tests' model unless the options below change it), tiny-gemma3 (as "
      "--arch gemma3), llama3.2-1b, llama3-8b, qwen2.5-7b, qwen3-8b or phi3.5-mini (every "
      "tensor of the real model, at its real "
      "size: GBs, streamed to disk)")(
      "arch", po::value<std::string>(),
      "tiny only: llama (default), gemma3 (QK-norms, post-norms, GeGLU, NEOX RoPE, "
      "sliding-window layers, soft-capping), qwen2 (Q/K/V biases, NEOX RoPE), qwen3 "
      "(QK-norms, NEOX RoPE), phi3 (fused QKV and gate/up, NEOX RoPE with LongRoPE factors "
      "and attention factor, a stated sliding window) or gemma2 (gemma3's block without "
      "QK-norms, attention soft-capping, every other layer local)")(
      "weights", po::value<std::string>(),
      "tiny only: mixed (default: a different type in most tensors), f16, bf16, q8_0, q4_0, "
      "q6_k, q4_k_m or q5_k_m (every matrix in that type or llama-quantize's mix; a row its "
      "blocks do not divide falls back as llama-quantize does)")(
      "dim", po::value<int>()->default_value(0), "tiny only: embedding width (0: 96)")(
      "heads", po::value<int>()->default_value(0), "tiny only: query heads (0: 6)")(
      "kv-heads", po::value<int>()->default_value(0), "tiny only: KV heads (0: 2)")(
      "head-dim", po::value<int>()->default_value(0),
      "tiny only: head dimension (0: dim / heads; gemma3 and gemma2: 32)")(
      "ffn", po::value<int>()->default_value(0), "tiny only: feed-forward width (0: 256)")(
      "sliding-window", po::value<int>()->default_value(0),
      "tiny only, llama and phi3: state this ARCH.attention.sliding_window (Mistral's, "
      "Phi-3-mini's), which llama.cpp does not apply on these architectures (0: none; phi3: "
      "5)")(
      "type", po::value<std::string>(),
      "weight type of a real shape: q4_0 (default), q8_0 or q4_k; every matrix and token_embd in "
      "it, norms f32")(
      "vocab", po::value<std::string>(),
      "tiny only: bpe (gpt2/smollm, default), spm (llama) or phi3 (spm with Phi-3's "
      "added tokens and template; the file's name then says phi3)")(
      "pre", po::value<std::string>(),
      "tiny only, bpe vocabulary: its pre-tokenizer (tokenizer.ggml.pre), e.g. qwen2 or llama3 "
      "(default: smollm, the one its merges were learned on)")(
      "untied", po::bool_switch(),
      "tiny only: write a separate output.weight instead of tying it to token_embd")(
      "seed", po::value<uint64_t>()->default_value(1), "weight seed");
  po::variables_map vm;
  if (!parse(args, desc, vm,
             "kvbench tiny-model -o FILE [--arch llama|gemma3|qwen2|qwen3|phi3|gemma2]\n"
             "                   [--weights TYPE]\n"
             "                   [--dim N] [--heads N] [--kv-heads N] [--head-dim N] [--ffn N]\n"
             "                   [--sliding-window N]\n"
             "                   [--vocab bpe|spm|phi3] [--pre NAME] [--untied] [--seed N]\n"
             "       kvbench tiny-model -o FILE --shape llama3.2-1b|llama3-8b|qwen2.5-7b|\n"
             "                   qwen3-8b|phi3.5-mini [--type "
             "q4_0|q8_0|q4_k] [--seed N]\n\n"
             "Writes a random-weight GGUF. The tiny files (3 layers) are the tests' models and\n"
             "the architecture checks against llama.cpp (docs/ARCHITECTURES.md): any architecture\n"
             "kvbench runs, at the shape and weight type given. A real shape has the real model's\n"
             "tensors, sizes and hyper-parameters (random weights change no timing): bench it\n"
             "with kvbench bench and llama-bench side by side (docs/PERFORMANCE.md). Its weights\n"
             "are random quantized blocks (a function of --seed), written to disk as they are\n"
             "made; its vocabulary is SentencePiece-style ('llama') of the real size (128256 for\n"
             "Llama 3, 152064 for Qwen2.5 7B, ...):\n"
             "<unk> <s> </s>, the 256 byte tokens, the tiny vocabulary's pieces, then filler."))
    return 0;
  const std::string out = vm["output"].as<std::string>();
  const uint64_t seed = vm["seed"].as<uint64_t>();
  const std::string shape_name = vm["shape"].as<std::string>();
  const bool tiny_options = vm.count("arch") || vm.count("weights") || vm.count("pre") ||
                            vm["dim"].as<int>() || vm["heads"].as<int>() ||
                            vm["kv-heads"].as<int>() || vm["head-dim"].as<int>() ||
                            vm["ffn"].as<int>() || vm["sliding-window"].as<int>();

  if (shape_name == "tiny" || shape_name == "tiny-gemma3") {
    if (vm.count("type"))
      throw InputError("--type applies to the real shapes (" + real_shape_names() +
                       "); a tiny file takes --weights");
    TinyModelOptions o;
    const std::string vocab = vm.count("vocab") ? vm["vocab"].as<std::string>() : "bpe";
    if (vocab == "bpe")
      o.vocab = TinyVocabKind::Bpe;
    else if (vocab == "spm")
      o.vocab = TinyVocabKind::Spm;
    else if (vocab == "phi3")
      o.vocab = TinyVocabKind::Phi3;
    else
      throw InputError("--vocab must be bpe, spm or phi3, got '" + escaped_text(vocab, 64) + "'");
    o.tied_output = !vm["untied"].as<bool>();
    if (vm.count("pre")) o.pre = escaped_text(vm["pre"].as<std::string>(), 64);
    const std::string arch = vm.count("arch")              ? vm["arch"].as<std::string>()
                             : shape_name == "tiny-gemma3" ? "gemma3"
                                                           : "llama";
    const std::optional<TinyArch> a = tiny_arch(arch);
    if (!a)
      throw InputError("--arch must be llama, gemma3, qwen2, qwen3, phi3 or gemma2, got '" +
                       escaped_text(arch, 64) + "'");
    if (shape_name == "tiny-gemma3" && *a != TinyArch::Gemma3)
      throw InputError("--shape tiny-gemma3 is --arch gemma3; got --arch " + arch);
    o.arch = *a;
    if (vm.count("weights")) {
      const std::string name = vm["weights"].as<std::string>();
      const std::optional<TinyWeights> w = tiny_weights(name);
      if (!w)
        throw InputError(
            "--weights must be mixed, f16, bf16, q8_0, q4_0, q6_k, q4_k_m or "
            "q5_k_m, got '" +
            escaped_text(name, 64) + "'");
      o.weights = *w;
    }
    o.dim = vm["dim"].as<int>();
    o.n_heads = vm["heads"].as<int>();
    o.n_kv_heads = vm["kv-heads"].as<int>();
    o.head_dim = vm["head-dim"].as<int>();
    o.ffn_dim = vm["ffn"].as<int>();
    o.sliding_window = vm["sliding-window"].as<int>();
    o.seed = seed;
    write_tiny_model(out, o);
    std::cout << "wrote " << out << " (" << tiny_arch_name(o.arch) << ", "
              << tiny_weights_name(o.weights) << ")\n";
    return 0;
  }
  if (tiny_options)
    throw InputError(
        "--arch, --weights, --pre, --dim, --heads, --kv-heads, --head-dim, --ffn and "
        "--sliding-window apply "
        "to --shape tiny only; " +
        escaped_text(shape_name, 64) + " has its own");

  const ModelShape* shape = find_model_shape(shape_name);
  if (!shape)
    throw InputError("unknown --shape '" + escaped_text(shape_name, 64) +
                     "' (known: tiny, tiny-gemma3, " + real_shape_names() + ")");
  if (vm.count("vocab") || vm["untied"].as<bool>())
    throw InputError("--vocab and --untied apply to --shape tiny or tiny-gemma3 only; " +
                     shape_name + " has its own vocabulary size and output tying");
  const std::string type_arg = vm.count("type") ? vm["type"].as<std::string>() : "q4_0";
  const std::optional<GgmlType> type = shaped_weight_type(type_arg);
  if (!type) throw InputError("unknown --type '" + type_arg + "' (known: " + type_names() + ")");

  int64_t params = 0;
  uint64_t bytes = 0;
  for (const PlannedTensor& t : plan_shaped_model(*shape, *type)) {
    params += t.elements;
    bytes += t.bytes;
  }
  write_shaped_model(out, *shape, *type, seed);
  char line[160];
  std::snprintf(line, sizeof line, " (%s %s: %lld parameters, %.2f GB of tensors)",
                shape->name.c_str(), std::string(type_name(*type)).c_str(),
                static_cast<long long>(params), bytes / 1e9);
  std::cout << "wrote " << out << line << "\n";
  return 0;
}

}  // namespace kvbench::cli
