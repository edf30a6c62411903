// The merge loop the BPE and SentencePiece tokenizers share (as llama.cpp's
// llm_tokenizer_bpe_session and llm_tokenizer_spm_session): a fragment's
// symbols in a doubly linked list, candidate pairs of neighbours in a
// priority queue, best first. Each tokenizer keeps its own Symbol and
// Bigram, its queue's order and what makes a pair a candidate.
#pragma once

#include <vector>

namespace kvbench {

// Symbol: {int prev, int next (-1: none), start, n (bytes; 0 once merged into
// its left neighbour)}. Appends the symbol of bytes [start, start + n) after
// the last one.
template <class Symbol, class Size>
void append_symbol(std::vector<Symbol>& syms, Size start, Size n) {
  const int idx = static_cast<int>(syms.size());
  syms.push_back({idx - 1, -1, start, n});
  if (idx > 0) syms[idx - 1].next = idx;
}

// Offers every pair of neighbours to try_pair(left, right) (which queues a
// candidate), then joins the best queued pair into its left symbol until the
// queue is empty, skipping pairs stale(bigram, left, right) says have changed
// since they were queued, and offering the joined symbol's new pairs.
template <class Symbol, class Queue, class TryPair, class Stale>
void merge_symbols(std::vector<Symbol>& syms, Queue& queue, const TryPair& try_pair,
                   const Stale& stale) {
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const auto b = queue.top();
    queue.pop();
    Symbol& l = syms[b.left];
    Symbol& r = syms[b.right];
    if (stale(b, l, r)) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }
}

}  // namespace kvbench
