// Byte-level BPE (GPT-2 style) over one fragment of raw text: pre-tokenize,
// map every byte to its GPT-2 code point, then repeatedly merge the adjacent
// pair with the lowest merge rank (leftmost first on ties) until no pair has a
// rank — the same order llama.cpp's llm_tokenizer_bpe_session uses, so ids
// agree. A heap plus a linked list of symbols keeps a word O(n log n).
#include <queue>

#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/symbol_merge.h"
#include "model/tokenizer/tokenizer_vocab.h"
#include "model/tokenizer/unicode_util.h"

namespace kvbench {
namespace {

struct Symbol {
  int prev;
  int next;
  uint32_t start;  // byte offset in the encoded word
  uint32_t n;      // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  int32_t rank;
  int left;
  int right;
  uint32_t left_n;  // sizes when queued: a changed size means a stale entry
  uint32_t right_n;
};

struct LaterFirst {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

}  // namespace

void bpe_encode_fragment(const Vocab& vocab, const PreTokenizer& pre, std::string_view text,
                         std::vector<int32_t>& out, std::vector<int64_t>* starts) {
  std::string word;
  std::string key;
  std::vector<Symbol> syms;
  std::priority_queue<Bigram, std::vector<Bigram>, LaterFirst> queue;

  // The chunks partition the text the pre-tokenizer saw: `text` itself, or
  // for invalid UTF-8 a copy with U+FFFD in place of bad bytes. source[b]:
  // the byte of `text` where byte b of that copy came from.
  std::vector<int64_t> source;
  if (starts != nullptr && !unicode::is_valid_utf8(text)) {
    std::string scratch;
    for (size_t off = 0; off < text.size();) {
      const size_t from = off;
      scratch.clear();
      unicode::append_utf8(scratch, unicode::decode_one(text, off));
      source.insert(source.end(), scratch.size(), static_cast<int64_t>(from));
    }
  }
  const auto source_of = [&](size_t b) {
    return source.empty()      ? static_cast<int64_t>(b)
           : b < source.size() ? source[b]
                               : static_cast<int64_t>(text.size());
  };

  size_t chunk_at = 0;  // byte offset of the chunk in the pre-tokenizer's text
  for (const std::string& chunk : pre.split(text)) {
    const size_t base = chunk_at;
    chunk_at += chunk.size();
    // Each byte of the chunk is one character of `word`, so symbol i starts
    // at byte i of the chunk (a merged symbol keeps its left part's index).
    const auto emit = [&](int32_t id, size_t byte_in_chunk) {
      out.push_back(id);
      if (starts != nullptr) starts->push_back(source_of(base + byte_in_chunk));
    };
    word.clear();
    for (unsigned char c : chunk) word += unicode::byte_to_utf8(c);

    if (pre.ignore_merges()) {
      // llama3-style vocabularies: a word that is itself a token is taken
      // whole, whatever the merges would have produced.
      if (const int32_t id = vocab.find(word); id >= 0) {
        emit(id, 0);
        continue;
      }
    }

    syms.clear();
    for (uint32_t off = 0; off < word.size();) {
      const uint32_t len =
          static_cast<uint32_t>(unicode::utf8_len_from_lead(static_cast<unsigned char>(word[off])));
      append_symbol(syms, off, len);
      off += len;
    }

    const auto try_pair = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      key.assign(word, syms[l].start, syms[l].n);
      key += ' ';
      key.append(word, syms[r].start, syms[r].n);
      const auto it = vocab.merge_rank.find(std::string_view(key));
      if (it == vocab.merge_rank.end()) return;
      queue.push({it->second, l, r, syms[l].n, syms[r].n});
    };
    merge_symbols(syms, queue, try_pair, [](const Bigram& b, const Symbol& l, const Symbol& r) {
      return l.n != b.left_n || r.n != b.right_n || l.n == 0 || r.n == 0;
    });

    for (size_t i = 0; i < syms.size(); ++i) {
      const Symbol& s = syms[i];
      if (s.n == 0) continue;
      const std::string_view piece(word.data() + s.start, s.n);
      if (const int32_t id = vocab.find(piece); id >= 0) {
        emit(id, i);
        continue;
      }
      // Not a token (an incomplete vocabulary): llama.cpp looks up each byte
      // of the encoded text on its own and drops what it cannot find.
      for (size_t k = 0; k < piece.size(); ++k) {
        if (const int32_t id = vocab.find(piece.substr(k, 1)); id >= 0) emit(id, i);
      }
    }
  }
}

}  // namespace kvbench
