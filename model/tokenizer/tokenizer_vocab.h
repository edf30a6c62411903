// Internal to the tokenizer: the vocabulary as read from GGUF and validated,
// with llama.cpp's derived state (token attributes after its text-based
// overrides, special-token partition order, end-of-generation set), and the
// two per-fragment encoders. Not part of the public API (see tokenizer.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvbench {

class GgufFile;
class PreTokenizer;

// llama.cpp's token attribute bits (llama_token_attr).
enum TokenAttrBits : uint32_t {
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 7,
  kAttrRstrip = 1u << 8,
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct Vocab {
  enum class Kind { Bpe, Spm };

  Kind kind = Kind::Bpe;
  std::string model;                                 // tokenizer.ggml.model
  std::string pre;                                   // pre-tokenizer name ("default" for SPM)
  std::shared_ptr<const PreTokenizer> pretokenizer;  // BPE only

  std::vector<std::string> text;  // per token; empty entries become "[EMPTY_<id>]"
  std::vector<float> score;
  std::vector<uint32_t> attr;  // TokenAttrBits
  StringMap<int32_t> token_to_id;
  // Merge "left right" (the merge string itself) -> rank. Lookups are made
  // with left/right symbols of byte-encoded text, which never contain a
  // space, so the key is unambiguous.
  StringMap<int32_t> merge_rank;

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;

  // Control / user-defined / unknown tokens, longest text first (ties by id):
  // the order in which text is searched for special-token spellings.
  std::vector<int32_t> special_order;
  std::vector<bool> end_of_generation;
  // SPM byte fallback: token of "<0xXX>" (or of the one-byte string), -1 if none.
  std::array<int32_t, 256> byte_token{};
  // Rendered piece of every token with special tokens shown (llama.cpp's
  // token_to_piece cache); bounded by the vocabulary size.
  std::vector<std::string> piece;
  std::string fingerprint;

  int32_t n() const { return static_cast<int32_t>(text.size()); }
  int32_t find(std::string_view s) const {
    const auto it = token_to_id.find(s);
    return it == token_to_id.end() ? -1 : it->second;
  }

  // Reads and validates tokenizer.ggml.*; throws InputError("<path>: ...").
  static Vocab load(const GgufFile& file);
};

// Byte-level BPE over one fragment of raw text (no special tokens inside).
// starts (optional): for each token appended to `out`, the byte offset in
// `text` where its bytes begin (a token of replaced invalid UTF-8 points at
// the byte it replaces).
void bpe_encode_fragment(const Vocab& vocab, const PreTokenizer& pre, std::string_view text,
                         std::vector<int32_t>& out, std::vector<int64_t>* starts = nullptr);
// SentencePiece merge over one fragment whose spaces are already U+2581.
// starts (optional): as above, offsets in `text` (the U+2581-spelled text).
void spm_encode_fragment(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out,
                         std::vector<int64_t>* starts = nullptr);

}  // namespace kvbench
