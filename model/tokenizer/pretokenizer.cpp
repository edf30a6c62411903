#include "model/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <stdexcept>

#include "model/tokenizer/unicode_util.h"

namespace kvbench {
namespace {

// The regexes are llama.cpp's (src/llama-vocab.cpp, llm_tokenizer_bpe), which
// are Hugging Face's tokenizer.json patterns with (?i:...) spelled out.
// `\s` / `\S` and the \p{..} classes are adjusted below to llama.cpp's
// character tables. llama.cpp itself runs the GPT-2 / Llama-3 / Qwen2 patterns
// through hand-written matchers and the rest through std::regex over a
// category-collapsed copy of the text; PCRE2 with these adjustments gives the
// same chunks (checked against llama.cpp's unicode_regex_split on hundreds of
// thousands of random strings, invalid UTF-8 included). The lookahead-heavy
// Tekken / GPT-4o patterns are slow (~1 s) on a single 200k-letter word.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kJais2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})";
constexpr const char* kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kUfakzeka =
    R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kMiniCpm5 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Tekken / GPT-4o: llama.cpp emulates \p{Lu}-style classes with lookaheads
// over ASCII [^a-z] / [^A-Z]; the same pattern under PCRE2 behaves identically
// (a non-ASCII letter counts as both "not a-z" and "not A-Z").
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

struct Family {
  std::vector<const char*> names;
  std::vector<const char*> regexes;
  bool ignore_merges = false;
  bool add_bos = false;
};

const std::vector<Family>& families() {
  static const std::vector<Family> table = {
      // "" is what llama.cpp falls back to when tokenizer.ggml.pre is absent.
      {{"default", ""}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      // "gpt2" is not a llama.cpp name (it says "gpt-2"); accepted as an alias
      // because it is the obvious spelling and maps to the same regex.
      {{"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
        "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo", "jais", "trillion", "granite-docling",
        "exaone4"},
       {kGpt2}},
      // SmolLM & co.: every digit is its own chunk, then GPT-2's regex.
      {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b",
        "mellum2"},
       {R"(\p{N})", kGpt2}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
        "jina-v5-nano"},
       {kLlama3},
       /*ignore_merges=*/true,
       /*add_bos=*/true},
      {{"dbrx", "smaug-bpe"}, {kLlama3}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "solar-open",
        "megrez", "grok-2"},
       {kQwen2}},
      {{"jais-2"}, {kJais2}},
      {{"seed-coder"}, {kSeedCoder}},
      {{"ufakzeka"}, {kUfakzeka}},
      {{"minicpm5"}, {R"(\p{N}{1,3})", kMiniCpm5}, /*ignore_merges=*/true},
      {{"tekken"}, {kTekken}, /*ignore_merges=*/true, /*add_bos=*/true},
      {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {{"bloom", "poro-chat", "gpt3-finnish"}, {kBloom}},
      {{"viking"}, {kBloom, R"(\p{N})"}},
  };
  return table;
}

// llama.cpp's notion of whitespace (unicode_set_whitespace), which differs
// from PCRE2's \s (that one also matches U+180E, for instance). Expressed as
// class contents so it can be spliced into bracket expressions.
constexpr const char* kWhitespaceClass =
    R"(\x{9}-\x{D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// Code points that llama.cpp's tables (Unicode 15.1) put in a general
// category but Debian 12's PCRE2 10.42 (Unicode 14) still has as unassigned:
// appended to \p{X} so that e.g. CJK Extension H/I count as letters, as in
// llama.cpp. With a newer PCRE2 they are simply redundant.
std::string_view category_supplement(char category) {
  switch (category) {
    case 'L':
      return R"(\x{1123F}-\x{11240}\x{11F02}\x{11F04}-\x{11F10}\x{11F12}-\x{11F33}\x{1342F}\x{13441}-\x{13446})"
             R"(\x{1B132}\x{1B155}\x{1DF25}-\x{1DF2A}\x{1E030}-\x{1E06D}\x{1E4D0}-\x{1E4EB}\x{2B739})"
             R"(\x{2EBF0}-\x{2EE5D}\x{31350}-\x{323AF})";
    case 'N':
      return R"(\x{11F50}-\x{11F59}\x{1D2C0}-\x{1D2D3}\x{1E4F0}-\x{1E4F9})";
    case 'P':
      return R"(\x{11B00}-\x{11B09}\x{11F43}-\x{11F4F})";
    case 'S':
      return R"(\x{2FFC}-\x{2FFF}\x{31EF}\x{1F6DC}\x{1F774}-\x{1F776}\x{1F77B}-\x{1F77F}\x{1F7D9})"
             R"(\x{1FA75}-\x{1FA77}\x{1FA87}-\x{1FA88}\x{1FAAD}-\x{1FAAF}\x{1FABB}-\x{1FABD}\x{1FABF})"
             R"(\x{1FACE}-\x{1FACF}\x{1FADA}-\x{1FADB}\x{1FAE8}\x{1FAF7}-\x{1FAF8})";
    case 'M':
      return R"(\x{0CF3}\x{0ECE}\x{10EFD}-\x{10EFF}\x{11241}\x{11F00}-\x{11F01}\x{11F03}\x{11F34}-\x{11F3A})"
             R"(\x{11F3E}-\x{11F42}\x{13440}\x{13447}-\x{13455}\x{1E08F}\x{1E4EC}-\x{1E4EF})";
    default:
      return {};
  }
}

// Rewrites \s and \S (inside and outside bracket expressions) to
// kWhitespaceClass and extends \p{L}, \p{N}, \p{P}, \p{S}, \p{M} with
// category_supplement; everything else is copied verbatim.
std::string rewrite_classes(std::string_view re) {
  std::string out;
  bool in_class = false;
  size_t class_start = 0;  // index in `re` of the first char after '[' / '[^'
  for (size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      const char e = re[i + 1];
      ++i;
      if (e == 'p' && i + 3 < re.size() && re[i + 1] == '{' && re[i + 3] == '}' &&
          !category_supplement(re[i + 2]).empty()) {
        const std::string_view extra = category_supplement(re[i + 2]);
        out += in_class ? "" : "[";
        out.append(re.substr(i - 1, 5));  // \p{X}
        out += extra;
        out += in_class ? "" : "]";
        i += 3;
      } else if (e == 's' || e == 'S') {
        if (in_class) {
          if (e == 'S') throw std::logic_error("pretokenizer: \\S inside a class is not supported");
          out += kWhitespaceClass;
        } else {
          out += e == 's' ? "[" : "[^";
          out += kWhitespaceClass;
          out += "]";
        }
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
      class_start = i + 1;
      continue;
    }
    // A ']' right after '[' or '[^' is a literal in PCRE2.
    if (in_class && c == ']' && i != class_start) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string> PreTokenizer::supported_names() {
  std::vector<std::string> names;
  for (const auto& f : families()) {
    for (const char* n : f.names) {
      if (*n) names.emplace_back(n);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::unique_ptr<PreTokenizer> PreTokenizer::create(std::string_view pre_name) {
  for (const auto& f : families()) {
    if (std::find(f.names.begin(), f.names.end(), pre_name) == f.names.end()) continue;
    std::unique_ptr<PreTokenizer> p(new PreTokenizer());
    p->name_ = pre_name.empty() ? "default" : std::string(pre_name);
    p->ignore_merges_ = f.ignore_merges;
    p->default_add_bos_ = f.add_bos;
    for (const char* src : f.regexes) {
      const std::string pattern = rewrite_classes(src);
      int err = 0;
      PCRE2_SIZE err_off = 0;
      auto re = std::make_unique<Regex>();
      // DOLLAR_ENDONLY: none of these patterns wants Perl's "$ before a final
      // newline"; llama.cpp's std::regex has ECMAScript semantics.
      re->code =
          pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                        PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_off, nullptr);
      if (!re->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        throw std::logic_error("pretokenizer regex does not compile: " +
                               std::string(reinterpret_cast<const char*>(msg)));
      }
      // JIT is an optimisation only; the interpreter is the fallback.
      pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
      p->regexes_.push_back(std::move(re));
    }
    return p;
  }
  return nullptr;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  // `norm` is the text llama.cpp actually tokenizes (invalid bytes -> U+FFFD);
  // `subject` is what PCRE2 sees: the same bytes except that surrogate code
  // points, which PCRE2 rejects as invalid UTF-8, become U+E000. Both are
  // 3-byte sequences, and both classes (Cs, Co) behave the same in every
  // pattern above, so byte offsets and chunk boundaries carry over.
  std::string norm;
  std::string subject;
  std::string_view n_view = text;
  std::string_view s_view = text;
  if (!unicode::is_valid_utf8(text)) {
    norm.reserve(text.size() + 16);
    subject.reserve(text.size() + 16);
    size_t off = 0;
    while (off < text.size()) {
      const uint32_t cpt = unicode::decode_one(text, off);
      unicode::append_utf8(norm, cpt);
      unicode::append_utf8(subject, cpt >= 0xD800 && cpt <= 0xDFFF ? 0xE000 : cpt);
    }
    n_view = norm;
    s_view = subject;
  }

  struct Range {
    size_t begin, end;
  };
  std::vector<Range> ranges;
  if (!s_view.empty()) ranges.push_back({0, s_view.size()});

  for (const auto& re : regexes_) {
    std::vector<Range> next;
    next.reserve(ranges.size() * 2);
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
    if (!md) throw std::bad_alloc();
    for (const Range& r : ranges) {
      const auto* subj = reinterpret_cast<PCRE2_SPTR>(s_view.data() + r.begin);
      const size_t len = r.end - r.begin;
      size_t pos = 0;   // search start, relative to r.begin
      size_t done = 0;  // end of the last emitted chunk
      while (pos < len) {
        int rc = pcre2_match(re->code, subj, len, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
          rc =
              pcre2_match(re->code, subj, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0)
          throw std::runtime_error("pretokenizer: PCRE2 match failed (" + std::to_string(rc) + ")");
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t ms = ov[0], me = ov[1];
        if (me == ms) {
          // None of the patterns can match empty, but never loop on one.
          pos = ms + unicode::utf8_len_from_lead(static_cast<unsigned char>(s_view[r.begin + ms]));
          continue;
        }
        if (ms > done) next.push_back({r.begin + done, r.begin + ms});
        next.push_back({r.begin + ms, r.begin + me});
        done = pos = me;
      }
      if (done < len) next.push_back({r.begin + done, r.end});
    }
    pcre2_match_data_free(md);
    ranges = std::move(next);
  }

  std::vector<std::string> chunks;
  chunks.reserve(ranges.size());
  for (const Range& r : ranges) chunks.emplace_back(n_view.substr(r.begin, r.end - r.begin));
  return chunks;
}

}  // namespace kvbench
