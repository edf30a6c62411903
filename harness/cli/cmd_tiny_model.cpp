// kvbench tiny-model: writes a random-weight LLaMA GGUF: the project's tiny
// model (the unit tests' model; also handy to compare against other runtimes)
// or, with --shape, a file of a real model's shape for speed measurements.
#include <cstdio>
#include <iostream>

#include "harness/cli/cli.h"
#include "model/common/error.h"
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
      "tiny (the tests' 3-layer model, a different tensor type in most tensors), tiny-gemma3 "
      "(the same as a gemma3 file: QK-norms, post-norms, GeGLU, NEOX RoPE, sliding-window "
      "layers), llama3.2-1b or "
      "llama3-8b (every tensor of the real model, at its real size: GBs, streamed to disk)")(
      "type", po::value<std::string>(),
      "weight type of a real shape: q4_0 (default), q8_0 or q4_k; every matrix and token_embd in "
      "it, "
      "norms f32")("vocab", po::value<std::string>(),
                   "tiny only: bpe (gpt2/smollm, default) or spm (llama)")(
      "untied", po::bool_switch(),
      "tiny only: write a separate output.weight instead of tying it to token_embd")(
      "seed", po::value<uint64_t>()->default_value(1), "weight seed");
  po::variables_map vm;
  if (!parse(
          args, desc, vm,
          "kvbench tiny-model -o FILE [--shape tiny|tiny-gemma3] [--vocab bpe|spm] [--untied] "
          "[--seed N]\n"
          "       kvbench tiny-model -o FILE --shape llama3.2-1b|llama3-8b [--type "
          "q4_0|q8_0|q4_k]\n"
          "                          [--seed N]\n\n"
          "Writes a random-weight LLaMA GGUF. A real shape has the real model's tensors, sizes "
          "and\n"
          "hyper-parameters (random weights change no timing): bench it with kvbench bench and\n"
          "llama-bench side by side (docs/PERFORMANCE.md). Its weights are random quantized "
          "blocks\n"
          "(a function of --seed), written to disk as they are made; its vocabulary is\n"
          "SentencePiece-style ('llama') of the real size (128256): <unk> <s> </s>, the 256 byte\n"
          "tokens, the tiny vocabulary's pieces, then filler pieces."))
    return 0;
  const std::string out = vm["output"].as<std::string>();
  const uint64_t seed = vm["seed"].as<uint64_t>();
  const std::string shape_name = vm["shape"].as<std::string>();

  if (shape_name == "tiny" || shape_name == "tiny-gemma3") {
    if (vm.count("type"))
      throw InputError("--type applies to the real shapes (" + real_shape_names() +
                       "); the tiny model mixes types by design");
    TinyModelOptions o;
    const std::string vocab = vm.count("vocab") ? vm["vocab"].as<std::string>() : "bpe";
    if (vocab == "bpe")
      o.vocab = TinyVocabKind::Bpe;
    else if (vocab == "spm")
      o.vocab = TinyVocabKind::Spm;
    else
      throw InputError("--vocab must be bpe or spm, got '" + vocab + "'");
    o.tied_output = !vm["untied"].as<bool>();
    o.gemma3 = shape_name == "tiny-gemma3";
    o.seed = seed;
    write_tiny_model(out, o);
    std::cout << "wrote " << out << "\n";
    return 0;
  }

  const ModelShape* shape = find_model_shape(shape_name);
  if (!shape)
    throw InputError("unknown --shape '" + shape_name + "' (known: tiny, tiny-gemma3, " +
                     real_shape_names() + ")");
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
