// Vocabulary loading and validation. The derived state follows llama.cpp's
// llama_vocab::impl::load so that the same file yields the same special-token
// handling (which spellings are parsed as tokens, which ids end generation).
#include "model/tokenizer/tokenizer_vocab.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/unicode_util.h"

namespace kvbench {
namespace {

// FNV-1a 64: tiny, fixed and platform-independent (std::hash is none of the
// last two), which is all a cache fingerprint needs.
class Fnv64 {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 0x100000001B3ull;
  }
  void u64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    bytes(b, 8);
  }
  void str(std::string_view s) {
    u64(s.size());  // length prefix: "ab"+"c" and "a"+"bc" hash differently
    bytes(s.data(), s.size());
  }
  std::string hex() const {
    static const char* digits = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 0; i < 16; ++i) out[15 - i] = digits[(h_ >> (4 * i)) & 15];
    return out;
  }

 private:
  uint64_t h_ = 0xCBF29CE484222325ull;
};

[[noreturn]] void fail(const GgufFile& f, const std::string& what) {
  throw InputError(f.path() + ": " + what);
}

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xNN>" -> NN, else -1.
int parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  const int hi = hex_value(t[3]), lo = hex_value(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

uint32_t attr_of_type(int32_t type) {
  switch (type) {
    case 1:
      return kAttrNormal;
    case 2:
      return kAttrUnknown;
    case 3:
      return kAttrControl;
    case 4:
      return kAttrUserDefined;
    case 5:
      return kAttrUnused;
    case 6:
      return kAttrByte;
    default:
      return 0;  // undefined
  }
}

// Numeric array of either element kind (llama.cpp accepts int32 scores too).
std::vector<float> read_scores(const GgufFile& f, const char* key) {
  const GgufValue* v = f.find(key);
  if (v && v->type == GgufType::ARRAY &&
      (v->elem_type == GgufType::I32 || v->elem_type == GgufType::U32)) {
    const auto ints = f.get_i32_array(key);
    return std::vector<float>(ints.begin(), ints.end());
  }
  return f.get_f32_array(key);
}

void build_pieces(Vocab& v) {
  v.piece.resize(v.text.size());
  for (size_t id = 0; id < v.text.size(); ++id) {
    const std::string& t = v.text[id];
    const uint32_t a = v.attr[id];
    std::string& p = v.piece[id];
    if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) {
      p = t;  // shown verbatim (hidden at render time unless asked for)
    } else if (a & kAttrNormal) {
      if (v.kind == Vocab::Kind::Spm) {
        // U+2581 stands for a space in SentencePiece pieces.
        for (size_t i = 0; i < t.size();) {
          if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
            p += ' ';
            i += 3;
          } else {
            p += t[i++];
          }
        }
      } else {
        // Byte-level BPE: every code point stands for one byte. A code point
        // outside GPT-2's table (only in odd vocabularies) is kept as UTF-8;
        // llama.cpp prints an "[UNK_BYTE_...]" marker instead.
        size_t off = 0;
        while (off < t.size()) {
          const uint32_t cpt = unicode::decode_one(t, off);
          const int b = unicode::cpt_to_byte(cpt);
          if (b >= 0) {
            p += static_cast<char>(b);
          } else {
            unicode::append_utf8(p, cpt);
          }
        }
      }
    } else if (a & kAttrByte) {
      p = std::string(1, static_cast<char>(parse_byte_token(t)));
    }
    // Undefined / unused tokens render as nothing, as in llama.cpp.
  }
}

}  // namespace

Vocab Vocab::load(const GgufFile& f) {
  Vocab v;
  Fnv64 fp;
  fp.str("kvbench-tokenizer-v1");

  // --- model and pre-tokenizer -------------------------------------------
  v.model = f.get_string("tokenizer.ggml.model");
  if (v.model == "gpt2") {
    v.kind = Kind::Bpe;
    const std::string pre = f.get_string_or("tokenizer.ggml.pre", "");
    auto p = PreTokenizer::create(pre);
    if (!p) {
      std::string names;
      for (const auto& n : PreTokenizer::supported_names())
        names += (names.empty() ? "" : ", ") + n;
      fail(f, "unsupported pre-tokenizer '" + pre + "' in tokenizer.ggml.pre (supported: " + names +
                  ")");
    }
    v.pre = p->name();
    v.add_bos = p->default_add_bos();
    v.pretokenizer = std::move(p);
  } else if (v.model == "llama") {
    v.kind = Kind::Spm;
    v.pre = "default";  // llama.cpp ignores tokenizer.ggml.pre for SPM
    v.add_bos = true;
    v.add_space_prefix = true;
  } else {
    fail(f, "unsupported tokenizer model '" + v.model +
                "' in tokenizer.ggml.model (supported: gpt2, llama)");
  }
  fp.str(v.model);
  fp.str(v.pre);

  // --- tokens, types, scores ---------------------------------------------
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = tokens.size();
  if (n == 0) fail(f, "tokenizer.ggml.tokens is empty");
  if (n > size_t(INT32_MAX)) fail(f, "tokenizer.ggml.tokens has too many entries");

  std::vector<int32_t> types;
  if (f.has("tokenizer.ggml.token_type")) {
    types = f.get_i32_array("tokenizer.ggml.token_type");
    if (types.size() != n) {
      fail(f, "tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                  " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
  }
  if (f.has("tokenizer.ggml.scores")) {
    v.score = read_scores(f, "tokenizer.ggml.scores");
    if (v.score.size() != n) {
      fail(f, "tokenizer.ggml.scores has " + std::to_string(v.score.size()) +
                  " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
  } else {
    v.score.assign(n, 0.0f);
  }

  v.text.resize(n);
  v.attr.assign(n, kAttrNormal);
  v.token_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = static_cast<int32_t>(i);
    // llama.cpp renames empty tokens rather than rejecting the file.
    v.text[i] = tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : std::string(tokens[i]);
    if (!types.empty()) {
      if (types[i] < 0 || types[i] > 6) {
        fail(f, "tokenizer.ggml.token_type: token " + std::to_string(i) + " has invalid type " +
                    std::to_string(types[i]));
      }
      v.attr[i] = attr_of_type(types[i]);
      if (types[i] == 6 && parse_byte_token(v.text[i]) < 0) {
        fail(f,
             "tokenizer.ggml.tokens: byte token " + std::to_string(i) + " is not spelled <0xNN>");
      }
    }
    if (std::isnan(v.score[i]))
      fail(f, "tokenizer.ggml.scores: token " + std::to_string(i) + " has a NaN score");
    if (!v.token_to_id.emplace(v.text[i], id).second) {
      fail(f, "tokenizer.ggml.tokens: tokens " + std::to_string(v.token_to_id[v.text[i]]) +
                  " and " + std::to_string(i) + " have the same text");
    }
  }

  // --- merges ------------------------------------------------------------
  if (v.kind == Kind::Bpe) {
    const auto merges = f.get_string_array("tokenizer.ggml.merges");
    v.merge_rank.reserve(merges.size());
    fp.u64(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const std::string_view m = merges[i];
      // llama.cpp splits at the first space after the first character.
      const size_t sp = m.find(' ', 1);
      if (sp == std::string_view::npos || sp + 1 >= m.size()) {
        fail(f, "tokenizer.ggml.merges: merge " + std::to_string(i) +
                    " is not of the form '<left> <right>'");
      }
      v.merge_rank.try_emplace(std::string(m), static_cast<int32_t>(i));  // first rank wins
      fp.str(m);
    }
  }

  // --- special ids and flags ----------------------------------------------
  // llama.cpp's defaults, disabled when outside the vocabulary.
  if (v.kind == Kind::Spm) {
    v.bos = 1, v.eos = 2, v.unk = 0;
  } else {
    v.bos = 11, v.eos = 11;
  }
  for (int32_t* id : {&v.bos, &v.eos, &v.unk}) {
    if (*id >= v.n()) *id = -1;
  }
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
  const std::pair<const char*, int32_t*> id_keys[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos},       {"tokenizer.ggml.eos_token_id", &v.eos},
      {"tokenizer.ggml.eot_token_id", &v.eot},       {"tokenizer.ggml.eom_token_id", &v.eom},
      {"tokenizer.ggml.unknown_token_id", &v.unk},   {"tokenizer.ggml.padding_token_id", &v.pad},
      {"tokenizer.ggml.fim_pre_token_id", &fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &fim_sep},
      {"tokenizer.ggml.prefix_token_id", &fim_pre},  // deprecated spellings
      {"tokenizer.ggml.suffix_token_id", &fim_suf},  {"tokenizer.ggml.middle_token_id", &fim_mid},
  };
  for (const auto& [key, id] : id_keys) {
    if (!f.has(key)) continue;
    const uint32_t x = f.get_u32(key);
    // llama.cpp warns and keeps its default; a wrong id in a file we feed to
    // a benchmark is better reported than silently replaced.
    if (x >= n)
      fail(f, std::string(key) + " = " + std::to_string(x) + " is outside the vocabulary of " +
                  std::to_string(n));
    *id = static_cast<int32_t>(x);
  }
  v.add_bos = f.get_bool_or("tokenizer.ggml.add_bos_token", v.add_bos);
  v.add_eos = f.get_bool_or("tokenizer.ggml.add_eos_token", v.add_eos);
  v.add_space_prefix = f.get_bool_or("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  if (v.add_bos && v.bos < 0)
    fail(f, "tokenizer.ggml.add_bos_token is true but there is no BOS token");
  if (v.add_eos && v.eos < 0)
    fail(f, "tokenizer.ggml.add_eos_token is true but there is no EOS token");

  // --- llama.cpp's text-based detection ----------------------------------
  // Converters do not always mark end-of-turn / FIM tokens; llama.cpp finds
  // them by spelling and forces them to be control tokens (which also makes
  // their spelling parse as the token). It scans a hash map, so with several
  // candidates its pick is unspecified; we take the lowest id.
  const auto force_control = [&](int32_t id) { v.attr[id] |= kAttrControl; };
  const auto detect = [&](int32_t& slot, std::initializer_list<std::string_view> names) {
    if (slot >= 0) return;
    for (int32_t id = 0; id < v.n(); ++id) {
      if (is_one_of(v.text[id], names)) {
        slot = id;
        force_control(id);
        return;
      }
    }
  };
  detect(v.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                 "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                 "<\xEF\xBD\x9C"
                 "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                 "<end_of_utterance>"});
  detect(v.eom, {"<|eom_id|>"});
  detect(fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                   "<\xEF\xBD\x9C"
                   "fim\xE2\x96\x81"
                   "begin\xEF\xBD\x9C>",
                   "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"});
  detect(fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                   "<\xEF\xBD\x9C"
                   "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
                   "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"});
  detect(fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                   "<\xEF\xBD\x9C"
                   "fim\xE2\x96\x81"
                   "end\xEF\xBD\x9C>",
                   "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"});
  detect(fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
  detect(fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  detect(fim_sep, {"<|file_sep|>"});

  v.end_of_generation.assign(n, false);
  for (int32_t id : {fim_pad, fim_rep, fim_sep}) {
    if (id >= 0) v.end_of_generation[id] = true;
  }
  for (int32_t id = 0; id < v.n(); ++id) {
    if (is_one_of(v.text[id], {"<|eot_id|>",
                               "<|im_end|>",
                               "<|end|>",
                               "<|return|>",
                               "<|call|>",
                               "<|flush|>",
                               "<|calls|>",
                               "<end_of_turn>",
                               "<|endoftext|>",
                               "</s>",
                               "<|eom_id|>",
                               "<EOT>",
                               "_<EOT>",
                               "[EOT]",
                               "[EOS]",
                               "<|end_of_text|>",
                               "<end_of_utterance>",
                               "<eos>",
                               "<turn|>",
                               "<|tool_response>",
                               "<\xEF\xBD\x9C"
                               "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                               "[e~["})) {
      v.end_of_generation[id] = true;
      force_control(id);
    }
  }
  // gpt-oss channel markers are always rendered (llama.cpp's override).
  for (int32_t id = 0; id < v.n(); ++id) {
    if (is_one_of(v.text[id], {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})) {
      v.attr[id] = kAttrUserDefined;
    }
  }
  for (int32_t id : {v.eos, v.eot, v.eom}) {
    if (id >= 0) v.end_of_generation[id] = true;
  }
  // Harmony / solar-open: "<|end|>" ends a message, not the generation.
  {
    const auto eog_named = [&](std::string_view s) {
      const int32_t id = v.find(s);
      return id >= 0 && v.end_of_generation[id] ? id : -1;
    };
    const int32_t end = eog_named("<|end|>");
    const bool ret = eog_named("<|return|>") >= 0;
    const bool call = eog_named("<|call|>") >= 0 || eog_named("<|calls|>") >= 0;
    const bool flush = eog_named("<|flush|>") >= 0;
    if (end >= 0 && ((ret && call) || (call && flush))) {
      v.end_of_generation[end] = false;
      v.attr[end] = kAttrUserDefined;
    }
    // Gemma-4 / PLaMo-2 have an ordinary "</s>".
    const int32_t s = eog_named("</s>");
    if (s >= 0 && (eog_named("<|tool_response>") >= 0 || eog_named("<|plamo:eos|>") >= 0)) {
      v.end_of_generation[s] = false;
      v.attr[s] = kAttrNormal;
    }
  }
  // Phi-3 files: whitespace after special tokens is dropped when encoding.
  {
    std::string name = f.get_string_or("general.name", "");
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
      for (int32_t id = 0; id < v.n(); ++id) {
        if (v.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown))
          v.attr[id] |= kAttrRstrip;
      }
      for (std::string_view t : {"</s>"}) {
        if (const int32_t id = v.find(t); id >= 0) v.attr[id] |= kAttrRstrip;
      }
      for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) {
        if (const int32_t id = v.find(t); id >= 0) v.attr[id] &= ~kAttrRstrip;
      }
    }
  }

  // --- derived tables -------------------------------------------------------
  for (int32_t id = 0; id < v.n(); ++id) {
    if (v.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown))
      v.special_order.push_back(id);
  }
  std::stable_sort(v.special_order.begin(), v.special_order.end(),
                   [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });

  v.byte_token.fill(-1);
  if (v.kind == Kind::Spm) {
    static const char* hex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      const char name[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
      int32_t id = v.find(name);
      if (id < 0) id = v.find(std::string(1, static_cast<char>(b)));
      v.byte_token[b] = id;
    }
  }
  build_pieces(v);

  // --- fingerprint ------------------------------------------------------------
  fp.u64(n);
  for (size_t i = 0; i < n; ++i) {
    fp.str(v.text[i]);
    fp.u64(v.attr[i]);
    uint32_t bits;
    std::memcpy(&bits, &v.score[i], sizeof bits);
    fp.u64(bits);
  }
  for (int32_t id : {v.bos, v.eos, v.eot, v.eom, v.unk, v.pad})
    fp.u64(static_cast<uint64_t>(int64_t{id}));
  fp.u64((v.add_bos ? 1u : 0u) | (v.add_eos ? 2u : 0u) | (v.add_space_prefix ? 4u : 0u));
  v.fingerprint = fp.hex();
  return v;
}

}  // namespace kvbench
