// kvbench tokenize: the token ids of a text on one line (llama.cpp's
// parse-special behaviour by default).
#include <iostream>

#include "harness/cli/cli.h"
#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/tokenizer/tokenizer.h"

namespace po = boost::program_options;

namespace kvbench::cli {

int cmd_tokenize(const Args& args) {
  po::options_description desc("options");
  desc.add_options()("model,m", po::value<std::string>(),
                     "GGUF model file (only its vocabulary is read)")(
      "text", po::value<std::string>(), "text to tokenize")("file", po::value<std::string>(),
                                                            "read the text from a file instead")(
      "no-special", po::bool_switch(), "treat special-token spellings as plain text")(
      "bos", po::bool_switch(), "prepend BOS when the vocabulary asks for it")(
      "pieces", po::bool_switch(), "print id:'piece' pairs instead of bare ids");
  po::variables_map vm;
  if (!parse(args, desc, vm, "kvbench tokenize [--model PATH] (--text TEXT | --file PATH)"))
    return 0;
  if (vm.count("text") == vm.count("file"))
    throw InputError("give exactly one of --text or --file");
  const std::string text = vm.count("text") ? vm["text"].as<std::string>()
                                            : read_text_file(vm["file"].as<std::string>());
  auto file = GgufFile::open(model_path(vm));
  auto tok = Tokenizer::from_gguf(*file);
  const auto ids = tok->encode(text, vm["bos"].as<bool>(), !vm["no-special"].as<bool>());
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
    if (vm["pieces"].as<bool>()) line += ":'" + tok->token_to_piece(ids[i], true) + "'";
  }
  std::cout << line << "\n";
  return 0;
}

}  // namespace kvbench::cli
