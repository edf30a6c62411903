// Tiny built-in vocabularies for the project's random-weight test model and
// the tokenizer tests: a byte-level BPE ("gpt2" model, "smollm" pre-tokenizer,
// ChatML specials, like SmolLM2) and a SentencePiece-style one ("llama" model
// with <0xNN> byte fallback, like Llama-2/TinyLlama). Both are generated
// deterministically from a small English text, so every build writes the same
// bytes, and both stay below 1000 tokens.
#pragma once

#include <cstdint>
#include <string>

namespace kvbench {

class GgufWriter;

// Phi3: Spm with Phi-3's added tokens after it (<|endoftext|>, <|assistant|>,
// <|placeholder1|>, <|system|>, <|end|>, <|user|>; control tokens, as
// llama.cpp's converter writes Phi-3-mini's) and Phi-3.5-mini's chat
// template: the vocabulary llama.cpp's name-keyed Phi-3 rule (rstrip after
// special tokens) needs, <|endoftext|> included, to load.
enum class TinyVocabKind { Bpe, Spm, Phi3 };

// Writes every tokenizer.* key of the vocabulary (model, pre, tokens,
// token_type, scores, merges, special ids, flags, chat_template).
void write_tiny_vocab(GgufWriter& w, TinyVocabKind kind);
// Number of tokens write_tiny_vocab writes for `kind`.
int32_t tiny_vocab_size(TinyVocabKind kind);

// The BPE vocabulary with tokenizer.ggml.pre = `pre` and four probe tokens
// appended after it, so that the pre-tokenizers' split rules change ids:
// "12" and "123" (merges "1 2", "12 3": only a split that keeps digits
// together, as Llama 3's groups of three, can form them), "456" with no
// merge (reachable only by ignore_merges, Llama 3's rule of taking a whole
// chunk that is a token), and "'M" (merge "' M": only a case-insensitive
// contraction rule, Qwen2's and Llama 3's, keeps ' and M in one chunk).
void write_tiny_vocab_with_pre(GgufWriter& w, const std::string& pre);
// Tokens write_tiny_vocab_with_pre writes.
int32_t tiny_vocab_with_pre_size();

// The SentencePiece-style vocabulary grown to exactly n_vocab tokens (for the
// random-weight models of real shapes, whose vocabulary size is part of the
// shape): the Spm vocabulary as it is (<unk> <s> </s>, the 256 byte tokens
// <0x00>..<0xFF>, characters, merged pieces), then filler pieces: U+2581
// (the SentencePiece space) + "filler<N>", normal tokens, unique, scored below
// every real piece.
// Same keys as write_tiny_vocab(w, Spm). std::invalid_argument when n_vocab
// is smaller than tiny_vocab_size(Spm).
void write_padded_spm_vocab(GgufWriter& w, int32_t n_vocab);

}  // namespace kvbench
