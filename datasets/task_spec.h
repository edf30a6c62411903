// Internal to datasets/: what each task generator returns before the
// haystack is built (datasets/tasks.cpp turns it into an Instance).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/haystack.h"
#include "datasets/rng.h"
#include "datasets/tasks.h"

namespace kvbench::datasets {

struct TaskSpec {
  std::string variant;  // "" for the default options, else e.g. "essay-uuid"; goes into the id
  std::string preamble, question, answer_prefix, grader;
  std::vector<std::string> answers;
  std::vector<NeedleRequest> needles;  // [0] is asked about and sits at the requested depth
  std::unique_ptr<Filler> filler;
  int max_new_tokens = 32;
  nlohmann::json extra = nlohmann::json::object();
  // Tasks whose context is not a haystack with needles (RULER's cwe and fwe:
  // a list sized to the length): called with the context length in tokens,
  // it sets `context` (and may set preamble, answers and extra); `filler`
  // and `needles` stay empty.
  std::function<void(TaskSpec&, const Tokenizer&, int64_t)> build;
  std::string context;
};

// Reads options, checking names and types; InputError "options.<name>: ...".
class Options {
 public:
  Options(const nlohmann::json& options, std::string task);
  std::string choice(const std::string& name, const std::vector<std::string>& allowed);
  int integer(const std::string& name, int fallback, int lo, int hi);
  void check_all_used() const;  // unknown option names are errors

 private:
  const nlohmann::json& options_;
  std::string task_;
  std::vector<std::string> used_;
};

// Generators. `rng` is seeded from (task, sample, seed); `depth` places needles[0].
TaskSpec make_niah(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_passkey(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_niah_single(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_niah_multikey(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_niah_multivalue(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_niah_multiquery(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_vt(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_qa(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_ppl(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_cwe(Options& o, Rng& rng, double depth, const Tokenizer& tok);
TaskSpec make_fwe(Options& o, Rng& rng, double depth, const Tokenizer& tok);

// Shared pieces (task_words.cpp).
// Dictionary words that the tokenizer spells with the fewest tokens (one,
// for a real vocabulary): keys read as words, not as letter soup.
const std::vector<std::string>& key_words(const Tokenizer& tok);
std::string random_key(Rng& rng,
                       const Tokenizer& tok);     // "word-word" (RULER's adjective-noun keys)
std::string random_number(Rng& rng, int digits);  // no leading zero
std::string random_uuid(Rng& rng);                // version 4, lower-case hex
std::string invented_name(Rng& rng);              // "Orvel Tamsine": a person nobody knows
std::string invented_town(Rng& rng);              // "Kessamoor"
std::unique_ptr<Filler> make_filler(const std::string& haystack, Rng& rng);  // noise | essay
// n positions in [lo, 1] drawn uniformly, sorted.
std::vector<double> random_positions(Rng& rng, int n, double lo = 0.0);

}  // namespace kvbench::datasets
