// The tiny vocabularies are trained here, at run time, by a few hundred
// rounds of plain BPE over a fixed English text: most-frequent adjacent pair
// first, ties broken by byte order, so the result is identical on every
// platform and build (nothing depends on hash-map iteration order).
#include "model/testing/tiny_vocab.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/gguf/gguf_writer.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/unicode_util.h"

namespace kvbench {
namespace {

constexpr const char* kTrainingText =
    "The quick brown fox jumps over the lazy dog. It's a sentence that people use\n"
    "because it contains every letter of the alphabet, and they've used it for years.\n"
    "We'll keep the cache small: a model with 3 layers, 96 dimensions and 6 heads\n"
    "doesn't need much memory, but the benchmark still measures how the cache is used.\n"
    "When the context grows past 512 tokens, the policy decides which entries to keep\n"
    "and which ones to evict. Some policies keep the first tokens and the most recent\n"
    "ones; others look at the attention scores and keep the tokens that matter most.\n"
    "I'm sure you'd agree that it is the simplest thing that could possibly work.\n"
    "Here is a list of numbers: 1, 2, 3, 10, 20, 30, 100, 2024 and 1234567890.\n"
    "The user asked a question and the assistant gave an answer. The answer was short,\n"
    "clear and correct, which is what a helpful assistant should always try to give.\n"
    "In the beginning there was nothing; then there was text, and then there were tokens.\n"
    "for (int i = 0; i < n; ++i) { total += values[i]; }  // sum the values\n"
    "def hello(name):\n    return \"Hello, \" + name + \"!\"\n"
    "Reading, writing and thinking are the things that the model should learn to do well.\n"
    "They're here, there and everywhere: in the house, in the garden, on the street.\n"
    "Once upon a time there was a little house at the edge of a forest. In the house\n"
    "lived an old woman and her cat. Every morning the woman opened the window, looked\n"
    "at the trees and said: \"What a beautiful day!\" The cat didn't say anything; it\n"
    "was sleeping in the sun. One day a stranger came to the door and asked for water.\n"
    "The woman gave him water and bread, and the stranger told her a story about the\n"
    "mountains, the rivers and the cities he had seen during his long travels.\n"
    "Questions and answers: What is the capital of France? Paris is the capital of\n"
    "France. How many days are there in a week? There are seven days in a week.\n"
    "Which planet is the largest? Jupiter is the largest planet in the solar system.\n"
    "The results were written to a table with the following columns: name, value,\n"
    "time and memory. Then the program printed the table and returned the result.\n"
    "She said that she would come back later, and he answered that he would wait.\n"
    "Learning to read and write takes time, but it is one of the most important\n"
    "things that children learn at school, together with numbers and counting.\n";

// Byte-level BPE: the ChatML specials, the 256 byte symbols, then merges.
struct BpeVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};

// One round-based BPE trainer used by both vocabularies: `words` maps a word
// (as a symbol sequence) to its count; each round merges the most frequent
// adjacent pair, the byte-wise smallest (left, right) among equals, stopping
// when no pair occurs twice. Returns the merges in order.
std::vector<std::pair<std::string, std::string>> train_bpe(
    const std::map<std::vector<std::string>, int>& words, int max_merges) {
  // Symbols are interned to ints so that a round is a flat counting pass.
  std::vector<std::string> text;
  std::map<std::string, int> id_of;
  const auto intern = [&](const std::string& s) {
    const auto [it, fresh] = id_of.emplace(s, static_cast<int>(text.size()));
    if (fresh) text.push_back(s);
    return it->second;
  };
  struct Word {
    std::vector<int> syms;
    int count;
  };
  std::vector<Word> ws;
  for (const auto& [syms, count] : words) {
    Word w{{}, count};
    for (const auto& s : syms) w.syms.push_back(intern(s));
    ws.push_back(std::move(w));
  }

  std::vector<std::pair<std::string, std::string>> merges;
  std::unordered_map<uint64_t, int> pairs;
  const auto key = [](int a, int b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); };
  for (int round = 0; round < max_merges; ++round) {
    pairs.clear();
    for (const Word& w : ws) {
      for (size_t i = 1; i < w.syms.size(); ++i) pairs[key(w.syms[i - 1], w.syms[i])] += w.count;
    }
    // Hash order is irrelevant: ties are broken on the symbols' bytes.
    int best_a = -1, best_b = -1, best_count = 1;
    for (const auto& [k, count] : pairs) {
      const int a = static_cast<int>(k >> 32), b = static_cast<int>(k & 0xFFFFFFFFu);
      if (count > best_count ||
          (count == best_count && best_a >= 0 &&
           std::tie(text[a], text[b]) < std::tie(text[best_a], text[best_b]))) {
        best_a = a, best_b = b, best_count = count;
      }
    }
    if (best_a < 0) break;
    merges.emplace_back(text[best_a], text[best_b]);
    const int merged = intern(text[best_a] + text[best_b]);
    for (Word& w : ws) {
      size_t out = 0;
      for (size_t i = 0; i < w.syms.size(); ++i) {
        if (i + 1 < w.syms.size() && w.syms[i] == best_a && w.syms[i + 1] == best_b) {
          w.syms[out++] = merged;
          ++i;
        } else {
          w.syms[out++] = w.syms[i];
        }
      }
      w.syms.resize(out);
    }
  }
  return merges;
}

const BpeVocab& bpe_vocab() {
  static const BpeVocab vocab = [] {
    BpeVocab v;
    for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
      v.tokens.emplace_back(s);
      v.types.push_back(3);  // control
    }
    for (int b = 0; b < 256; ++b) {
      v.tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
      v.types.push_back(1);
    }
    // Train on exactly the chunks the "smollm" pre-tokenizer produces.
    const auto pre = PreTokenizer::create("smollm");
    std::map<std::vector<std::string>, int> words;
    for (const std::string& chunk : pre->split(kTrainingText)) {
      std::vector<std::string> syms;
      for (unsigned char c : chunk) syms.push_back(unicode::byte_to_utf8(c));
      ++words[syms];
    }
    std::map<std::string, bool> seen;
    for (const auto& t : v.tokens) seen[t] = true;
    for (const auto& [l, r] : train_bpe(words, 400)) {
      v.merges.push_back(l + " " + r);
      if (!seen[l + r]) {
        seen[l + r] = true;
        v.tokens.push_back(l + r);
        v.types.push_back(1);
      }
    }
    return v;
  }();
  return vocab;
}

// SentencePiece-style: <unk> <s> </s>, byte fallback tokens, the characters
// of the text, then merged pieces scored by merge order (earlier = higher).
struct SpmVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;
};

const SpmVocab& spm_vocab() {
  static const SpmVocab vocab = [] {
    SpmVocab v;
    const auto add = [&](std::string t, int32_t type, float score) {
      v.tokens.push_back(std::move(t));
      v.types.push_back(type);
      v.scores.push_back(score);
    };
    add("<unk>", 2, 0.0f);
    add("<s>", 3, 0.0f);
    add("</s>", 3, 0.0f);
    static const char* hex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b)
      add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 6, 0.0f);

    // Words as SentencePiece sees them: "▁word". Newlines and tabs are left
    // out on purpose so that they exercise the byte fallback.
    const std::string marker = "\xE2\x96\x81";
    std::map<std::vector<std::string>, int> words;
    std::map<std::string, bool> chars;
    std::string word;
    const auto flush = [&] {
      if (word.empty()) return;
      std::vector<std::string> syms{marker};
      chars[marker] = true;
      for (size_t i = 0; i < word.size();) {
        const size_t n = unicode::utf8_len_from_lead(static_cast<unsigned char>(word[i]));
        syms.push_back(word.substr(i, n));
        chars[syms.back()] = true;
        i += n;
      }
      ++words[syms];
      word.clear();
    };
    for (const char* p = kTrainingText; *p; ++p) {
      if (*p == ' ' || *p == '\n' || *p == '\t') {
        flush();
      } else {
        word += *p;
      }
    }
    flush();

    std::map<std::string, bool> seen;
    for (const auto& t : v.tokens) seen[t] = true;
    float char_score = -1000.0f;
    for (const auto& [c, unused] : chars) {
      (void)unused;
      add(c, 1, char_score);
      char_score -= 1.0f;
      seen[c] = true;
    }
    float score = 0.0f;
    for (const auto& [l, r] : train_bpe(words, 350)) {
      if (seen[l + r]) continue;
      seen[l + r] = true;
      add(l + r, 1, score);
      score -= 1.0f;
    }
    return v;
  }();
  return vocab;
}

// SmolLM2-135M-Instruct's template, verbatim.
constexpr const char* kChatMlTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}";

// TinyLlama-1.1B-Chat's (Zephyr) template.
constexpr const char* kZephyrTemplate =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
    "{{ '<|user|>\\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n"
    "{{ '<|system|>\\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
    "'assistant' %}\n"
    "{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor "
    "%}";

// Phi-3.5-mini-instruct's template, verbatim.
constexpr const char* kPhi3Template =
    "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}"
    "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}"
    "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}"
    "{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}";

// Phi-3's added tokens, in Phi-3-mini's order (ids 32000.. there).
const SpmVocab& phi3_vocab() {
  static const SpmVocab vocab = [] {
    SpmVocab v = spm_vocab();
    for (const char* t : {"<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|system|>",
                          "<|end|>", "<|user|>"}) {
      v.tokens.emplace_back(t);
      v.types.push_back(3);
      v.scores.push_back(0.0f);
    }
    return v;
  }();
  return vocab;
}

// Both tiny vocabularies: <unk> is id 0, BOS 1, EOS 2.
void write_special_token_ids(GgufWriter& w) {
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
}

void write_spm_keys(GgufWriter& w, const SpmVocab& v) {
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  w.set_f32_array("tokenizer.ggml.scores", v.scores);
  w.set_i32_array("tokenizer.ggml.token_type", v.types);
  write_special_token_ids(w);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
  w.set_bool("tokenizer.ggml.add_space_prefix", true);
  w.set_string("tokenizer.chat_template", kZephyrTemplate);
}

}  // namespace

void write_tiny_vocab(GgufWriter& w, TinyVocabKind kind) {
  if (kind == TinyVocabKind::Bpe) {
    const BpeVocab& v = bpe_vocab();
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "smollm");
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    w.set_i32_array("tokenizer.ggml.token_type", v.types);
    w.set_string_array("tokenizer.ggml.merges", v.merges);
    // As in SmolLM2: BOS is <|im_start|> but is not added.
    write_special_token_ids(w);
    w.set_u32("tokenizer.ggml.padding_token_id", 2);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    w.set_string("tokenizer.chat_template", kChatMlTemplate);
  } else if (kind == TinyVocabKind::Spm) {
    write_spm_keys(w, spm_vocab());
  } else {
    write_spm_keys(w, phi3_vocab());
    w.set_string("tokenizer.chat_template", kPhi3Template);
  }
}

namespace {

// write_tiny_vocab_with_pre's probes: tokens, and the merges that reach the
// first three (the last, "456", has none on purpose).
const std::vector<std::string> kProbeTokens = {"12", "123", "'M", "456"};
const std::vector<std::string> kProbeMerges = {"1 2", "12 3", "' M"};

}  // namespace

void write_tiny_vocab_with_pre(GgufWriter& w, const std::string& pre) {
  BpeVocab v = bpe_vocab();
  v.tokens.insert(v.tokens.end(), kProbeTokens.begin(), kProbeTokens.end());
  v.types.insert(v.types.end(), kProbeTokens.size(), 1);
  v.merges.insert(v.merges.end(), kProbeMerges.begin(), kProbeMerges.end());
  write_tiny_vocab(w, TinyVocabKind::Bpe);
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  w.set_i32_array("tokenizer.ggml.token_type", v.types);
  w.set_string_array("tokenizer.ggml.merges", v.merges);
}

int32_t tiny_vocab_with_pre_size() {
  return tiny_vocab_size(TinyVocabKind::Bpe) + static_cast<int32_t>(kProbeTokens.size());
}

int32_t tiny_vocab_size(TinyVocabKind kind) {
  switch (kind) {
    case TinyVocabKind::Bpe:
      return static_cast<int32_t>(bpe_vocab().tokens.size());
    case TinyVocabKind::Spm:
      return static_cast<int32_t>(spm_vocab().tokens.size());
    case TinyVocabKind::Phi3:
      return static_cast<int32_t>(phi3_vocab().tokens.size());
  }
  return 0;
}

void write_padded_spm_vocab(GgufWriter& w, int32_t n_vocab) {
  SpmVocab v = spm_vocab();
  if (n_vocab < static_cast<int32_t>(v.tokens.size())) {
    throw std::invalid_argument("write_padded_spm_vocab: " + std::to_string(n_vocab) + " < the " +
                                std::to_string(v.tokens.size()) + " tokens of the Spm vocabulary");
  }
  std::map<std::string, bool> seen;
  for (const auto& t : v.tokens) seen[t] = true;
  float score = v.scores.back();
  for (const float s : v.scores) score = std::min(score, s);
  const std::string marker = "\xE2\x96\x81";
  for (int64_t i = 0; static_cast<int32_t>(v.tokens.size()) < n_vocab; ++i) {
    std::string piece = marker + "filler" + std::to_string(i);
    if (seen[piece]) continue;  // never with today's training text; kept unique regardless
    seen[piece] = true;
    score -= 1.0f;
    v.tokens.push_back(std::move(piece));
    v.types.push_back(1);
    v.scores.push_back(score);
  }
  write_spm_keys(w, v);
}

}  // namespace kvbench
