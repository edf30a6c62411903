// SentencePiece-style tokenization over one fragment (spaces already U+2581):
// start from UTF-8 characters and repeatedly merge the adjacent pair whose
// concatenation is the vocabulary piece with the highest score (leftmost on
// ties), as llama.cpp's llm_tokenizer_spm_session does. Characters that never
// became a piece fall back to <0xNN> byte tokens, then to the unknown token.
#include <algorithm>
#include <queue>

#include "model/tokenizer/symbol_merge.h"
#include "model/tokenizer/tokenizer_vocab.h"
#include "model/tokenizer/unicode_util.h"

namespace kvbench {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t start;
  size_t n;  // 0 once merged into the left neighbour
};

struct Bigram {
  float score;
  int left;
  int right;
  size_t size;  // bytes of the merged piece when queued
};

struct LowerFirst {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  }
};

}  // namespace

void spm_encode_fragment(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out,
                         std::vector<int64_t>* starts) {
  if (text.empty()) return;
  std::vector<Symbol> syms;
  syms.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    // Split by the lead byte's announced length, without validation: invalid
    // UTF-8 still ends up as byte tokens.
    const size_t len = std::min(unicode::utf8_len_from_lead(static_cast<unsigned char>(text[off])),
                                text.size() - off);
    append_symbol(syms, off, len);
    off += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, LowerFirst> queue;
  const auto try_pair = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    // Symbols are contiguous in `text`, so the pair is one substring.
    const size_t size = syms[l].n + syms[r].n;
    const int32_t id = vocab.find(text.substr(syms[l].start, size));
    if (id < 0) return;
    queue.push({vocab.score[id], l, r, size});
  };
  // Sizes only grow, so an unchanged sum means neither side changed.
  merge_symbols(syms, queue, try_pair, [](const Bigram& b, const Symbol& l, const Symbol& r) {
    return l.n == 0 || r.n == 0 || l.n + r.n != b.size;
  });

  for (int i = 0; i != -1; i = syms[i].next) {
    const std::string_view piece = text.substr(syms[i].start, syms[i].n);
    if (const int32_t id = vocab.find(piece); id >= 0) {
      out.push_back(id);
      if (starts != nullptr) starts->push_back(static_cast<int64_t>(syms[i].start));
      continue;
    }
    for (size_t k = 0; k < piece.size(); ++k) {
      const unsigned char c = static_cast<unsigned char>(piece[k]);
      const int32_t id = vocab.byte_token[c] >= 0 ? vocab.byte_token[c] : vocab.unk;
      if (id < 0) continue;
      out.push_back(id);
      if (starts != nullptr) starts->push_back(static_cast<int64_t>(syms[i].start + k));
    }
  }
}

}  // namespace kvbench
