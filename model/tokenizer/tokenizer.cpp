// Tokenizer front end: special-token partitioning, BOS/EOS, dispatch to the
// BPE or SentencePiece fragment encoder, and decoding. The vocabulary and its
// validation live in tokenizer_vocab.cpp, the encoders in bpe_tokenizer.cpp /
// spm_tokenizer.cpp, the pre-tokenizer regexes in pretokenizer.cpp.
#include "model/tokenizer/tokenizer.h"

#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/tokenizer_vocab.h"

namespace kvbench {
namespace {

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// A piece of the input: raw text [off, off + len) or one special token.
struct Fragment {
  int32_t token;  // -1 for raw text
  size_t off;
  size_t len;
};

class VocabTokenizer final : public Tokenizer {
 public:
  explicit VocabTokenizer(Vocab v) : v_(std::move(v)) {}

  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special) const override {
    return encode_fragments(text, partition(text, parse_special), add_bos, nullptr);
  }

  std::vector<int32_t> encode_parts(std::span<const TextPart> parts, bool add_bos,
                                    std::vector<int64_t>* starts) const override {
    std::string joined;
    std::vector<Fragment> frags;
    for (const TextPart& part : parts) {
      const size_t base = joined.size();
      joined += part.text;
      for (Fragment f : partition(part.text, part.parse_special)) {
        f.off += base;
        Fragment* last = frags.empty() ? nullptr : &frags.back();
        // A special token's lstrip / rstrip eat the whitespace next to it
        // across a part boundary too, as partition() does inside one text.
        if (f.token >= 0 && (v_.attr[f.token] & kAttrLstrip) && last != nullptr &&
            last->token < 0) {
          while (last->len > 0 && is_ascii_space(joined[last->off + last->len - 1])) --last->len;
          if (last->len == 0) frags.pop_back();
          last = frags.empty() ? nullptr : &frags.back();
        }
        if (f.token < 0 && last != nullptr && last->token >= 0 &&
            (v_.attr[last->token] & kAttrRstrip)) {
          while (f.len > 0 && is_ascii_space(joined[f.off])) ++f.off, --f.len;
          if (f.len == 0) continue;
        }
        // Raw text continuing raw text is one fragment: the pre-tokenizer and
        // the merges see across the boundary, as in the rendered string.
        if (f.token < 0 && last != nullptr && last->token < 0 && last->off + last->len == f.off)
          last->len += f.len;
        else
          frags.push_back(f);
      }
    }
    return encode_fragments(joined, frags, add_bos, starts);
  }

  std::string decode(const std::vector<int32_t>& ids, bool render_special) const override {
    std::string out;
    // SPM: the space the encoder put in front of the text (at the start and
    // after each special token) is taken off again, so decode(encode(s)) == s.
    // llama.cpp strips only at the very start; stripping after specials too
    // makes this the exact inverse of the encoder.
    bool strip = v_.kind == Vocab::Kind::Spm && v_.add_space_prefix;
    for (const int32_t id : ids) {
      if (id < 0 || id >= v_.n()) continue;
      if (is_partition_token(id)) {
        out += token_to_piece(id, render_special);
        strip = v_.kind == Vocab::Kind::Spm && v_.add_space_prefix;
        continue;
      }
      const std::string& p = v_.piece[id];
      out.append(p, strip && !p.empty() && p[0] == ' ' ? 1 : 0);
      strip = false;
    }
    return out;
  }

  std::string token_to_piece(int32_t id, bool render_special) const override {
    if (id < 0 || id >= v_.n()) return {};
    if (!render_special && (v_.attr[id] & (kAttrControl | kAttrUnknown))) return {};
    return v_.piece[id];
  }

  int32_t n_vocab() const override { return v_.n(); }
  int32_t bos() const override { return v_.bos; }
  int32_t eos() const override { return v_.eos; }
  bool is_end_of_generation(int32_t id) const override {
    return id >= 0 && id < v_.n() && v_.end_of_generation[id];
  }
  std::string_view model_name() const override { return v_.model; }
  std::string_view pre_name() const override { return v_.pre; }
  std::string fingerprint() const override { return v_.fingerprint; }

 private:
  // The ids of `text` cut into `frags` (see encode_parts for `starts`).
  std::vector<int32_t> encode_fragments(std::string_view text, const std::vector<Fragment>& frags,
                                        bool add_bos, std::vector<int64_t>* starts) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (starts != nullptr) {
      starts->clear();
      starts->reserve(out.capacity());
    }
    const auto push = [&](int32_t id, size_t at) {
      out.push_back(id);
      if (starts != nullptr) starts->push_back(static_cast<int64_t>(at));
    };
    if (add_bos && v_.add_bos) push(v_.bos, 0);
    std::vector<int64_t> local;  // a fragment's token starts, in its own bytes
    std::vector<int64_t>* local_starts = starts != nullptr ? &local : nullptr;
    if (v_.kind == Vocab::Kind::Spm) {
      // SentencePiece sees a space before the text at the start and after
      // every special token (llama.cpp's is_prev_special), and spells spaces
      // as U+2581.
      bool prev_special = true;
      std::string buf;
      std::vector<int64_t> source;  // [buf.size()] byte of `text` behind each byte of buf
      for (const Fragment& f : frags) {
        if (f.token >= 0) {
          push(f.token, f.off);
          prev_special = true;
          continue;
        }
        buf.clear();
        source.clear();
        const auto put = [&](std::string_view bytes, size_t from) {
          buf += bytes;
          if (starts != nullptr)
            source.insert(source.end(), bytes.size(), static_cast<int64_t>(from));
        };
        if (v_.add_space_prefix && prev_special) put("\xE2\x96\x81", f.off);
        for (size_t k = 0; k < f.len; ++k) {
          const char c = text[f.off + k];
          put(c == ' ' ? std::string_view("\xE2\x96\x81") : std::string_view(&c, 1), f.off + k);
        }
        local.clear();
        spm_encode_fragment(v_, buf, out, local_starts);
        if (starts != nullptr)
          for (const int64_t b : local) starts->push_back(source[static_cast<size_t>(b)]);
        prev_special = false;
      }
    } else {
      for (const Fragment& f : frags) {
        if (f.token >= 0) {
          push(f.token, f.off);
          continue;
        }
        local.clear();
        bpe_encode_fragment(v_, *v_.pretokenizer, text.substr(f.off, f.len), out, local_starts);
        if (starts != nullptr)
          for (const int64_t b : local) starts->push_back(static_cast<int64_t>(f.off) + b);
      }
    }
    if (add_bos && v_.add_eos) push(v_.eos, text.size());
    return out;
  }

  // Tokens the partition step can produce (and after which SPM adds a space).
  bool is_partition_token(int32_t id) const {
    return (v_.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) != 0;
  }

  // llama.cpp's tokenizer_st_partition: for each special token, longest
  // first, cut every occurrence out of the remaining raw-text fragments.
  // Control and unknown tokens take part only with parse_special; user-defined
  // tokens always do (as in Hugging Face tokenizers).
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const {
    std::vector<Fragment> frags;
    if (text.empty()) return frags;
    frags.push_back({-1, 0, text.size()});
    std::vector<Fragment> next;
    for (const int32_t id : v_.special_order) {
      const uint32_t attr = v_.attr[id];
      if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
      const std::string& tok = v_.text[id];
      if (text.find(tok) == std::string_view::npos) continue;  // cheap skip
      next.clear();
      for (const Fragment& f : frags) {
        if (f.token >= 0) {
          next.push_back(f);
          continue;
        }
        size_t pos = f.off;
        size_t end = f.off + f.len;
        while (true) {
          const size_t m = text.substr(0, end).find(tok, pos);
          if (m == std::string_view::npos) {
            if (end > pos) next.push_back({-1, pos, end - pos});
            break;
          }
          size_t left_len = m - pos;
          if (attr & kAttrLstrip) {
            while (left_len > 0 && is_ascii_space(text[pos + left_len - 1])) --left_len;
          }
          if (left_len > 0) next.push_back({-1, pos, left_len});
          next.push_back({id, m, tok.size()});
          pos = m + tok.size();
          if (pos < end && (attr & kAttrRstrip)) {
            while (pos < end && is_ascii_space(text[pos])) ++pos;
          }
          if (pos >= end) break;
        }
      }
      frags.swap(next);
    }
    return frags;
  }

  Vocab v_;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
  return std::make_unique<VocabTokenizer>(Vocab::load(file));
}

}  // namespace kvbench
