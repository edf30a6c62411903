// RULER's aggregation tasks, whose context is a list of words sized to the
// length, with no needle: common words extraction (cwe) and frequent words
// extraction (fwe), as NVIDIA/RULER's generators build them
// (scripts/data/synthetic/common_words_extraction.py and
// freq_words_extraction.py; docs/LITERATURE.md says where ours differs).
// Depth has no meaning here: no needle, depth.actual 0.
#include <algorithm>
#include <cmath>
#include <set>

#include "datasets/task_spec.h"
#include "datasets/text_source.h"
#include "model/common/error.h"

namespace kvbench::datasets {
namespace {

// "1. w 2. w 3. w" (RULER's numbered list).
std::string numbered(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i)
    s += (i ? " " : "") + std::to_string(i + 1) + ". " + words[i];
  return s;
}

// The first `common` of words[0, n) `common_repeats` times each and the rest
// `repeats` times, shuffled by a copy of `rng` (the same order for the same n).
std::vector<std::string> repeated(const std::vector<std::string>& words, size_t n, int common,
                                  int common_repeats, int repeats, Rng rng) {
  std::vector<std::string> list;
  for (size_t i = 0; i < n; ++i)
    list.insert(list.end(), i < static_cast<size_t>(common) ? common_repeats : repeats, words[i]);
  rng.shuffle(list);
  return list;
}

// The largest n in [lo, hi] whose text(n) has at most `target` tokens, by
// bisection (the text grows with n). InputError when text(lo) does not fit.
template <class F>
int64_t largest_fitting(const Tokenizer& tok, int64_t target, int64_t lo, int64_t hi, F text,
                        const char* what) {
  if (count_tokens(tok, text(lo)) > target)
    throw InputError("length: " + std::to_string(target) + " tokens cannot hold " + what);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (count_tokens(tok, text(mid)) <= target)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// A coded word: 6 random lower-case letters, not in `taken` (then added).
std::string coded(Rng& rng, std::set<std::string>& taken) {
  for (;;) {
    std::string w;
    for (int i = 0; i < 6; ++i) w += static_cast<char>('a' + rng.below(26));
    if (taken.insert(w).second) return w;
  }
}

constexpr char kCweInstruction[] =
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.";
constexpr char kCweQuestion[] = "Question: What are the 10 most common words in the above list?";
constexpr int kCommon = 10;
constexpr int64_t kLongList = 3500;  // context tokens from which cwe's list is RULER's long one

}  // namespace

TaskSpec make_cwe(Options&, Rng& rng, double, const Tokenizer& tok) {
  TaskSpec s;
  // The vocabulary in this sample's order: the words the tokenizer spells
  // shortest first (RULER draws from wonderwords' nouns, adjectives and
  // verbs), then the rest of the dictionary when a long list needs more.
  std::vector<std::string> words = key_words(tok);
  rng.shuffle(words);
  {
    const std::set<std::string> taken(words.begin(), words.end());
    std::vector<std::string> more;
    for (const auto& w : dictionary_words())
      if (!taken.count(w)) more.push_back(w);
    rng.shuffle(more);
    words.insert(words.end(), more.begin(), more.end());
  }
  const Rng order = rng;  // the shuffles of the lists below
  s.answers.assign(words.begin(), words.begin() + kCommon);
  s.question = kCweQuestion;
  s.answer_prefix = "Answer: The top 10 words that appear most often in the list are:";
  s.grader = "all_values";
  s.max_new_tokens = 120;
  s.build = [words = std::move(words), order](TaskSpec& spec, const Tokenizer& t, int64_t length) {
    // RULER's sequences below 4096 tokens: 6 and 1 repeats, a 20-word
    // example with 3 and 1; from 4096: 30 and 3, a 40-word example with 10
    // and 3. RULER counts the whole sequence (prompt and 120 generated
    // tokens), kvbench's length the context alone: a 4096-token RULER
    // sequence holds about 3,500 tokens of list, so that is the switch.
    const bool short_list = length < kLongList;
    const int common_repeats = short_list ? 6 : 30, repeats = short_list ? 1 : 3;
    const size_t example_words = short_list ? 20 : 40;
    // The example takes the vocabulary's last words, so no word of the list
    // is in it.
    const std::vector<std::string> example(words.end() - example_words, words.end());
    // Every distinct word is at least one entry of at least one token: no
    // more than `length` of them fit, which bounds the search.
    const int64_t n = largest_fitting(
        t, length, kCommon + 1,
        std::min(static_cast<int64_t>(words.size() - example_words), length),
        [&](int64_t k) {
          return numbered(repeated(words, k, kCommon, common_repeats, repeats, order));
        },
        "the common words' repeats");
    spec.context = numbered(repeated(words, n, kCommon, common_repeats, repeats, order));
    const std::vector<std::string> example_list =
        repeated(example, example_words, kCommon, short_list ? 3 : 10, short_list ? 1 : 3, order);
    const std::vector<std::string> example_answer(example.begin(), example.begin() + kCommon);
    spec.preamble = std::string(kCweInstruction) + "\n" + numbered(example_list) + "\n" +
                    kCweQuestion + " " + numbered(example_answer) + "\n" + kCweInstruction;
    spec.extra = {{"distinct_words", n},
                  {"repeats", {{"common", common_repeats}, {"other", repeats}}}};
  };
  return s;
}

TaskSpec make_fwe(Options&, Rng& rng, double, const Tokenizer&) {
  TaskSpec s;
  // Coded words in rank order (the draw order: RULER sorts and shuffles, the
  // same distribution). Rank 1 is the noise '...'; the answer is ranks 2-4,
  // drawn first so that one sample asks the same words at every length.
  std::set<std::string> taken;
  for (int k = 0; k < 3; ++k) s.answers.push_back(coded(rng, taken));
  s.preamble =
      "Read the following coded text and track the frequency of each coded word. Find the three "
      "most frequently appeared coded words.";
  s.question =
      "Question: Do not provide any explanation. Please ignore the dots '....'. What are the "
      "three most frequently appeared words in the above coded text?";
  s.answer_prefix =
      "Answer: According to the coded text above, the three most frequently appeared words are:";
  s.grader = "all_values";
  s.max_new_tokens = 50;
  s.build = [answers = s.answers, rng, taken](TaskSpec& spec, const Tokenizer& t,
                                              int64_t length) mutable {
    // RULER: a vocabulary of length / 50 words, the word of rank k
    // int(N k^-2 / zeta(2)) times (Zipf, alpha 2), N as large as fits.
    std::vector<std::string> vocab = {"..."};
    vocab.insert(vocab.end(), answers.begin(), answers.end());
    const size_t size = std::max<size_t>(vocab.size() + 1, static_cast<size_t>(length / 50));
    while (vocab.size() < size) vocab.push_back(coded(rng, taken));
    const Rng order = rng;
    constexpr double kZeta2 = 1.6449340668482264;  // pi^2 / 6
    const auto text = [&](int64_t n) {
      std::vector<std::string> words;
      for (size_t k = 1; k <= vocab.size(); ++k)
        words.insert(
            words.end(),
            static_cast<size_t>(static_cast<double>(n) / (static_cast<double>(k * k) * kZeta2)),
            vocab[k - 1]);
      Rng r = order;
      r.shuffle(words);
      std::string joined;
      for (size_t i = 0; i < words.size(); ++i) joined += (i ? " " : "") + words[i];
      return joined;
    };
    // From N = 64 on, ranks 1-5 appear 38, 9, 4, 2 and 1 times or more
    // apart: the three answers stand out.
    const int64_t n = largest_fitting(t, length, 64, length * 4, text, "the coded words");
    spec.context = text(n);
    spec.extra = {{"vocabulary", vocab.size()}, {"words", n}};
  };
  return s;
}

}  // namespace kvbench::datasets
