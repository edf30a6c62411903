// kvbench tiny-model: writes the project's tiny random-weight LLaMA GGUF
// (the unit tests' model; also handy to compare against other runtimes).
#include <iostream>

#include "harness/cli.h"
#include "model/error.h"
#include "model/tiny_model.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_tiny_model(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("output,o", po::value<std::string>()->required(), "output GGUF path")(
      "vocab", po::value<std::string>()->default_value("bpe"), "vocabulary: bpe (gpt2/smollm) or spm (llama)")(
      "untied", po::bool_switch(), "write a separate output.weight instead of tying it to token_embd")(
      "seed", po::value<uint64_t>()->default_value(1), "weight seed");
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench tiny-model -o FILE [--vocab bpe|spm] [--untied] [--seed N]"))
    return 0;
  TinyModelOptions o;
  const std::string vocab = vm["vocab"].as<std::string>();
  if (vocab == "bpe") o.vocab = TinyVocabKind::Bpe;
  else if (vocab == "spm") o.vocab = TinyVocabKind::Spm;
  else throw InputError("--vocab must be bpe or spm, got '" + vocab + "'");
  o.tied_output = !vm["untied"].as<bool>();
  o.seed = vm["seed"].as<uint64_t>();
  write_tiny_model(vm["output"].as<std::string>(), o);
  std::cout << "wrote " << vm["output"].as<std::string>() << "\n";
  return 0;
}

}  // namespace kvbench::cli
