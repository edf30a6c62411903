// Tokenizer built from a GGUF vocabulary: byte-level BPE (tokenizer.ggml.model
// = "gpt2") with the pre-tokenizer named by tokenizer.ggml.pre, and
// SentencePiece-style ("llama") vocabularies. Token ids match llama.cpp's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

class GgufFile;

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenAttr : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// One part of a text to encode (see Tokenizer::encode_parts).
struct TextPart {
  std::string_view text;
  bool parse_special = false;  // its spellings of control tokens become those tokens
};

class Tokenizer {
 public:
  // Throws InputError("<path>: ...") for a missing/invalid vocabulary or an
  // unsupported tokenizer model / pre-tokenizer name.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
  virtual ~Tokenizer() = default;

  // add_bos: prepend BOS when the vocabulary asks for it
  // (tokenizer.ggml.add_bos_token; llama.cpp's add_special). parse_special:
  // text spelling a special/control token ("<|im_start|>") becomes that token.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos,
                                      bool parse_special) const = 0;
  // Encodes the concatenation of `parts` as one text: raw text is
  // pre-tokenized and merged across part boundaries, so a prompt rendered from
  // a chat template (specials parsed) around content (not parsed) gets the ids
  // of its rendered string, while the content cannot spell a control token.
  // starts (optional, [ids]): the byte offset in the concatenation where each
  // token's text begins (BOS at 0, EOS at the end); non-decreasing.
  virtual std::vector<int32_t> encode_parts(std::span<const TextPart> parts, bool add_bos,
                                            std::vector<int64_t>* starts) const = 0;
  // Text of the ids; special tokens are rendered only when render_special.
  virtual std::string decode(const std::vector<int32_t>& ids,
                             bool render_special = false) const = 0;
  // Bytes of one token as it would appear in a stream (may be a partial UTF-8
  // sequence for byte tokens); used for streamed generation output.
  virtual std::string token_to_piece(int32_t id, bool render_special = false) const = 0;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos() const = 0;                          // -1 when none
  virtual int32_t eos() const = 0;                          // -1 when none
  virtual bool is_end_of_generation(int32_t id) const = 0;  // eos, eot, <|im_end|>, ...
  virtual std::string_view model_name() const = 0;          // "gpt2" / "llama"
  virtual std::string_view pre_name() const = 0;            // "smollm", "default", ...
  // Stable hash of everything that determines encoding (vocab, merges, scores,
  // types, pre-tokenizer, flags); hex string. Used by cache snapshots.
  virtual std::string fingerprint() const = 0;
};

}  // namespace kvbench
