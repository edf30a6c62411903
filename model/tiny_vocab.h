// Tiny built-in vocabularies for the project's random-weight test model and
// the tokenizer tests: a byte-level BPE ("gpt2" model, "smollm" pre-tokenizer,
// ChatML specials, like SmolLM2) and a SentencePiece-style one ("llama" model
// with <0xNN> byte fallback, like Llama-2/TinyLlama). Both are generated
// deterministically from a small English text, so every build writes the same
// bytes, and both stay below 1000 tokens.
#pragma once

#include <cstdint>

namespace kvbench {

class GgufWriter;

enum class TinyVocabKind { Bpe, Spm };

// Writes every tokenizer.* key of the vocabulary (model, pre, tokens,
// token_type, scores, merges, special ids, flags, chat_template).
void write_tiny_vocab(GgufWriter& w, TinyVocabKind kind);
// Number of tokens write_tiny_vocab writes for `kind`.
int32_t tiny_vocab_size(TinyVocabKind kind);

}  // namespace kvbench
