// Needle tasks: the classic needle test, passkey retrieval and RULER's
// "special magic number" family (single, multikey, multivalue, multiquery).
#include <set>

#include "datasets/task_spec.h"

namespace kvbench::datasets {
namespace {

// The classic needle (gkamradt's "best thing to do in San Francisco"), with
// an invented place as the answer so the model cannot know it.
struct Outing {
  const char* activity;
  const char* key;
};
const Outing kOutings[] = {
    {"eat a sandwich and sit in Marlow Park on a sunny day", "Marlow Park"},
    {"ride the old ferry to Tessel Island at sunset", "Tessel Island"},
    {"drink hot cider at the Quillon Market in winter", "Quillon Market"},
    {"walk along the Brenna Canal and feed the ducks", "Brenna Canal"},
    {"climb the Varrow Steps early in the morning", "Varrow Steps"},
    {"listen to the street organ in Pellin Square", "Pellin Square"},
    {"rent a rowing boat on Lake Osmere", "Lake Osmere"},
    {"try the smoked fish at the Dunmore Pier", "Dunmore Pier"},
};
const char* const kCities[] = {"San Francisco", "Lisbon", "Toronto", "Melbourne",
                               "Oslo",          "Denver", "Krakow",  "Nairobi",
                               "Boston",        "Osaka",  "Seville", "Glasgow"};

struct MagicWords {
  std::string noun, nouns;  // "number", "numbers" / "uuid", "uuids"
};
MagicWords magic_words(const std::string& value) {
  return value == "uuid" ? MagicWords{"UUID", "UUIDs"} : MagicWords{"number", "numbers"};
}
std::string magic_value(Rng& rng, const std::string& value) {
  return value == "uuid" ? random_uuid(rng) : random_number(rng, 7);
}
std::string magic_needle(const MagicWords& w, const std::string& key, const std::string& value) {
  return "One of the special magic " + w.nouns + " for " + key + " is: " + value + ".";
}
// Distinct keys, none equal to those in `taken`.
std::string fresh_key(Rng& rng, const Tokenizer& tok, std::set<std::string>& taken) {
  for (;;) {
    std::string k = random_key(rng, tok);
    if (taken.insert(k).second) return k;
  }
}
std::string fresh_value(Rng& rng, const std::string& kind, std::set<std::string>& taken) {
  for (;;) {
    std::string v = magic_value(rng, kind);
    if (taken.insert(v).second) return v;
  }
}
std::string join_keys(const std::vector<std::string>& keys) {
  if (keys.size() == 1) return keys[0];
  std::string s;
  for (size_t i = 0; i + 1 < keys.size(); ++i) s += keys[i] + ", ";
  return s + (keys.size() > 2 ? "and " : "and ") + keys.back();
}
std::string variant_of(const std::vector<std::pair<std::string, std::string>>& parts) {
  std::string v;
  for (const auto& [value, fallback] : parts)
    if (value != fallback) v += (v.empty() ? "" : "-") + value;
  return v;
}

}  // namespace

TaskSpec make_niah(Options& o, Rng& rng, double depth, const Tokenizer&) {
  TaskSpec s;
  const Outing& outing = kOutings[rng.below(std::size(kOutings))];
  const std::string city = kCities[rng.below(std::size(kCities))];
  s.filler = make_filler("essay", rng);
  s.preamble =
      "Read the document below. A question about it follows; answer it from the document, short "
      "and direct.";
  s.needles = {{"The best thing to do in " + city + " is " + outing.activity + ".", depth}};
  s.question = "What is the best thing to do in " + city + "?";
  s.answer_prefix = "The best thing to do in " + city + " is";
  s.answers = {outing.key};
  s.grader = "contains";
  s.max_new_tokens = 32;
  s.extra = {{"city", city}, {"activity", outing.activity}};
  return s;
}

TaskSpec make_passkey(Options& o, Rng& rng, double depth, const Tokenizer&) {
  TaskSpec s;
  const std::string haystack = o.choice("haystack", {"noise", "essay"});
  s.variant = variant_of({{haystack, "noise"}});
  const std::string key = random_number(rng, 5);
  s.filler = make_filler(haystack, rng);
  s.preamble =
      "There is an important piece of information hidden inside a lot of irrelevant text. Find it "
      "and memorize it. "
      "I will quiz you about the important information there.";
  // The key follows "The pass key number is" twice, exactly as the answer
  // prefix ends: a small model finds it by copying. (With the original
  // "... 71432 is the pass key." SmolLM2 answered "the pass key"; with
  // "The pass key is" it explained what a pass key is at 4k tokens; "number"
  // makes it look for digits.)
  s.needles = {
      {"The pass key number is " + key + ". Remember it. The pass key number is " + key + ".",
       depth}};
  s.question = "What is the pass key number?";
  s.answer_prefix = "The pass key number is";
  s.answers = {key};
  s.grader = "numeric";
  s.max_new_tokens = 12;
  s.extra = {{"haystack", haystack}};
  return s;
}

TaskSpec make_niah_single(Options& o, Rng& rng, double depth, const Tokenizer& tok) {
  TaskSpec s;
  const std::string haystack = o.choice("haystack", {"noise", "essay"});
  const std::string value_kind = o.choice("value", {"number", "uuid"});
  s.variant = variant_of({{haystack, "noise"}, {value_kind, "number"}});
  const MagicWords w = magic_words(value_kind);
  const std::string key = random_key(rng, tok);
  const std::string value = magic_value(rng, value_kind);
  s.filler = make_filler(haystack, rng);
  s.preamble = "A special magic " + w.noun +
               " is hidden within the following text. Make sure to memorize it. " +
               "I will quiz you about the " + w.noun + " afterwards.";
  s.needles = {{magic_needle(w, key, value), depth}};
  s.question =
      "What is the special magic " + w.noun + " for " + key + " mentioned in the provided text?";
  s.answer_prefix =
      "The special magic " + w.noun + " for " + key + " mentioned in the provided text is";
  s.answers = {value};
  s.grader = "contains";
  s.max_new_tokens = value_kind == "uuid" ? 40 : 16;
  s.extra = {{"haystack", haystack}, {"value", value_kind}, {"keys", {key}}};
  return s;
}

TaskSpec make_niah_multikey(Options& o, Rng& rng, double depth, const Tokenizer& tok) {
  TaskSpec s;
  const std::string haystack = o.choice("haystack", {"noise", "essay", "needles"});
  const std::string value_kind = o.choice("value", {"number", "uuid"});
  const int distractors = o.integer("distractors", 3, 1, 64);
  s.variant = variant_of({{haystack, "noise"}, {value_kind, "number"}});
  if (distractors != 3 && haystack != "needles")
    s.variant += (s.variant.empty() ? "d" : "-d") + std::to_string(distractors);
  const MagicWords w = magic_words(value_kind);
  std::set<std::string> keys_taken, values_taken;
  const std::string key = fresh_key(rng, tok, keys_taken);
  const std::string value = fresh_value(rng, value_kind, values_taken);
  s.needles = {{magic_needle(w, key, value), depth}};
  std::vector<std::string> distractor_keys;
  if (haystack == "needles") {
    // RULER's multikey_2/3: the haystack itself is distractor needles, each
    // made from its index alone (any count, same text for the same seed).
    const uint64_t base = rng.next();
    s.filler =
        std::make_unique<GeneratedFiller>([w, value_kind, key, value, base, &tok](int64_t i) {
          Rng r(hash_mix(base, static_cast<uint64_t>(i)));
          std::string k = random_key(r, tok), v = magic_value(r, value_kind);
          while (k == key) k = random_key(r, tok);
          while (v == value) v = magic_value(r, value_kind);
          return magic_needle(w, k, v);
        });
  } else {
    s.filler = make_filler(haystack, rng);
    const auto positions = random_positions(rng, distractors);
    for (int i = 0; i < distractors; ++i) {
      distractor_keys.push_back(fresh_key(rng, tok, keys_taken));
      s.needles.push_back(
          {magic_needle(w, distractor_keys.back(), fresh_value(rng, value_kind, values_taken)),
           positions[i]});
    }
  }
  s.preamble = "A special magic " + w.noun +
               " is hidden within the following text. Make sure to memorize it. " +
               "I will quiz you about the " + w.noun + " afterwards.";
  s.question =
      "What is the special magic " + w.noun + " for " + key + " mentioned in the provided text?";
  s.answer_prefix =
      "The special magic " + w.noun + " for " + key + " mentioned in the provided text is";
  s.answers = {value};
  s.grader = "contains";
  s.max_new_tokens = value_kind == "uuid" ? 40 : 16;
  s.extra = {{"haystack", haystack},
             {"value", value_kind},
             {"keys", {key}},
             {"distractor_keys", distractor_keys}};
  return s;
}

TaskSpec make_niah_multivalue(Options& o, Rng& rng, double depth, const Tokenizer& tok) {
  TaskSpec s;
  const std::string haystack = o.choice("haystack", {"noise", "essay"});
  const int n_values = o.integer("values", 4, 2, 16);
  s.variant = variant_of({{haystack, "noise"}});
  if (n_values != 4) s.variant += (s.variant.empty() ? "v" : "-v") + std::to_string(n_values);
  const MagicWords w = magic_words("number");
  const std::string key = random_key(rng, tok);
  std::set<std::string> values_taken;
  s.filler = make_filler(haystack, rng);
  const auto positions = random_positions(rng, n_values - 1);
  for (int i = 0; i < n_values; ++i) {
    s.answers.push_back(fresh_value(rng, "number", values_taken));
    s.needles.push_back(
        {magic_needle(w, key, s.answers.back()), i == 0 ? depth : positions[i - 1]});
  }
  s.preamble = "Some special magic " + w.nouns +
               " are hidden within the following text. Make sure to memorize them. " +
               "I will quiz you about the " + w.nouns + " afterwards.";
  s.question = "What are all the special magic " + w.nouns + " for " + key +
               " mentioned in the provided text?";
  s.answer_prefix =
      "The special magic " + w.nouns + " for " + key + " mentioned in the provided text are";
  s.grader = "all_values";
  s.max_new_tokens = 16 * n_values;
  s.extra = {{"haystack", haystack}, {"keys", {key}}};
  return s;
}

TaskSpec make_niah_multiquery(Options& o, Rng& rng, double depth, const Tokenizer& tok) {
  TaskSpec s;
  const std::string haystack = o.choice("haystack", {"noise", "essay"});
  const int n_queries = o.integer("queries", 4, 2, 16);
  s.variant = variant_of({{haystack, "noise"}});
  if (n_queries != 4) s.variant += (s.variant.empty() ? "q" : "-q") + std::to_string(n_queries);
  const MagicWords w = magic_words("number");
  std::set<std::string> keys_taken, values_taken;
  std::vector<std::string> keys;
  nlohmann::json queries = nlohmann::json::array();
  s.filler = make_filler(haystack, rng);
  const auto positions = random_positions(rng, n_queries - 1);
  for (int i = 0; i < n_queries; ++i) {
    keys.push_back(fresh_key(rng, tok, keys_taken));
    s.answers.push_back(fresh_value(rng, "number", values_taken));
    s.needles.push_back(
        {magic_needle(w, keys.back(), s.answers.back()), i == 0 ? depth : positions[i - 1]});
    queries.push_back({{"key", keys.back()}, {"values", {s.answers.back()}}});
  }
  s.preamble = "Some special magic " + w.nouns +
               " are hidden within the following text. Make sure to memorize them. " +
               "I will quiz you about the " + w.nouns + " afterwards.";
  s.question = "What are all the special magic " + w.nouns + " for " + join_keys(keys) +
               " mentioned in the provided text?";
  s.answer_prefix = "The special magic " + w.nouns + " for " + join_keys(keys) +
                    " mentioned in the provided text are";
  s.grader = "per_query";
  s.max_new_tokens = 16 * n_queries;
  s.extra = {{"haystack", haystack}, {"keys", keys}, {"queries", queries}};
  return s;
}

}  // namespace kvbench::datasets
