// Byte-level BPE pre-tokenizers: the regex lists llama.cpp applies for each
// tokenizer.ggml.pre name, run with PCRE2 (UTF + UCP). Each regex splits every
// chunk the previous one produced into its matches and the text between them
// ("isolated" behaviour), and only sees its own chunk (lookaheads stop at the
// chunk's end), exactly as llama.cpp's unicode_regex_split does.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

class PreTokenizer {
 public:
  // nullptr for a name kvbench does not support. "" means "default" (what
  // llama.cpp uses when tokenizer.ggml.pre is missing).
  static std::unique_ptr<PreTokenizer> create(std::string_view pre_name);
  // Every accepted name, sorted, for error messages.
  static std::vector<std::string> supported_names();

  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Splits `text` into chunks (UTF-8, not yet byte-encoded). Invalid UTF-8 is
  // first normalised the way llama.cpp does (each bad byte becomes U+FFFD), so
  // the chunks concatenate to the input whenever the input is valid UTF-8.
  std::vector<std::string> split(std::string_view text) const;

  const std::string& name() const { return name_; }
  // llama.cpp flags tied to the pre-tokenizer type.
  bool ignore_merges() const { return ignore_merges_; }  // whole-word vocab hit skips BPE
  bool default_add_bos() const { return default_add_bos_; }

 private:
  struct Regex;
  PreTokenizer() = default;

  std::string name_;
  bool ignore_merges_ = false;
  bool default_add_bos_ = false;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace kvbench
