// Keys, values and invented names for the task generators.
#include <algorithm>
#include <map>
#include <mutex>

#include "datasets/task_spec.h"
#include "datasets/text_source.h"

namespace kvbench::datasets {

const std::vector<std::string>& key_words(const Tokenizer& tok) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<std::string>>
      by_vocab;  // tokenizer fingerprint -> words
  std::lock_guard<std::mutex> lock(mutex);
  const std::string fp = tok.fingerprint();
  auto it = by_vocab.find(fp);
  if (it != by_vocab.end()) return it->second;
  const auto& words = dictionary_words();
  std::vector<std::pair<int64_t, const std::string*>> counted;
  counted.reserve(words.size());
  for (const auto& w : words) counted.emplace_back(count_tokens(tok, " " + w), &w);
  std::stable_sort(counted.begin(), counted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // All words of the smallest token count that still gives 1000 words.
  const int64_t limit = counted[std::min<size_t>(999, counted.size() - 1)].first;
  std::vector<std::string> out;
  for (const auto& [n, w] : counted)
    if (n <= limit) out.push_back(*w);
  std::sort(out.begin(), out.end());
  return by_vocab.emplace(fp, std::move(out)).first->second;
}

std::string random_key(Rng& rng, const Tokenizer& tok) {
  const auto& words = key_words(tok);
  std::string a = rng.pick(words), b = rng.pick(words);
  while (b == a) b = rng.pick(words);
  return a + "-" + b;
}

std::string random_number(Rng& rng, int digits) {
  std::string s(1, static_cast<char>('1' + rng.below(9)));
  for (int i = 1; i < digits; ++i) s += static_cast<char>('0' + rng.below(10));
  return s;
}

std::string random_uuid(Rng& rng) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) s += '-';
    int v = static_cast<int>(rng.below(16));
    if (i == 12) v = 4;            // version 4
    if (i == 16) v = 8 + (v & 3);  // RFC 4122 variant
    s += kHex[v];
  }
  return s;
}

namespace {

// Pronounceable, short and unknown: simple consonant-vowel syllables
// ("Belo Ranvik", "Tormere"), so names cost few tokens and read as names.
const std::vector<std::string> kOnsets = {"b", "d", "f", "g", "h", "k", "l", "m",
                                          "n", "p", "r", "s", "t", "v", "z"};
const std::vector<std::string> kVowels = {"a", "e", "i", "o", "u"};
const std::vector<std::string> kCodas = {"", "", "", "l", "n", "r", "s", "m", "k"};
const std::vector<std::string> kTownEnds = {"mere",  "ford", "holm", "vale",  "wick",
                                            "stead", "moor", "by",   "haven", "crest"};

std::string syllable(Rng& rng, bool coda) {
  return rng.pick(kOnsets) + rng.pick(kVowels) + (coda ? rng.pick(kCodas) : "");
}
std::string capitalized(std::string s) {
  s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

}  // namespace

std::string invented_name(Rng& rng) {
  const std::string first = syllable(rng, false) + syllable(rng, true);
  const std::string last = syllable(rng, true) + syllable(rng, true);
  return capitalized(first) + " " + capitalized(last);
}

std::string invented_town(Rng& rng) {
  return capitalized(syllable(rng, true) + rng.pick(kTownEnds));
}

std::unique_ptr<Filler> make_filler(const std::string& haystack, Rng& rng) {
  if (haystack == "noise") return std::make_unique<NoiseFiller>();
  const Prose& prose = essay_prose();
  // Start at a paragraph's first sentence.
  std::vector<int64_t> starts;
  for (size_t i = 0; i < prose.sentences.size(); ++i)
    if (prose.starts_paragraph[i]) starts.push_back(static_cast<int64_t>(i));
  return std::make_unique<ProseFiller>(prose, rng.pick(starts));
}

std::vector<double> random_positions(Rng& rng, int n, double lo) {
  std::vector<double> p(n);
  for (double& x : p) x = lo + (1.0 - lo) * rng.real();
  std::sort(p.begin(), p.end());
  return p;
}

}  // namespace kvbench::datasets
