// Variable tracking (RULER's vt), question answering over invented entities,
// and long text for perplexity.
#include <set>

#include "datasets/task_spec.h"

namespace kvbench::datasets {
namespace {

std::string variable_name(Rng& rng, std::set<std::string>& taken) {
  for (;;) {
    std::string v;
    for (int i = 0; i < 5; ++i) v += static_cast<char>('A' + rng.below(26));
    if (taken.insert(v).second) return v;
  }
}

template <class F>
std::string fresh(Rng& rng, std::set<std::string>& taken, F make) {
  for (;;) {
    std::string s = make(rng);
    if (taken.insert(s).second) return s;
  }
}

}  // namespace

TaskSpec make_vt(Options& o, Rng& rng, double depth, const Tokenizer&) {
  TaskSpec s;
  const int hops = o.integer("hops", 4, 1, 32);
  const int chains = o.integer("chains", 1, 1, 8);
  if (hops != 4) s.variant = "h" + std::to_string(hops);
  if (chains != 1) s.variant += (s.variant.empty() ? "c" : "-c") + std::to_string(chains);
  std::set<std::string> names, values;
  s.filler = make_filler("noise", rng);
  std::string asked_value;
  nlohmann::json all_chains = nlohmann::json::array();
  for (int c = 0; c < chains; ++c) {
    const std::string value = fresh(rng, values, [](Rng& r) { return random_number(r, 5); });
    std::vector<std::string> vars;
    for (int h = 0; h <= hops; ++h) vars.push_back(variable_name(rng, names));
    // The asked chain starts at the requested depth and runs on towards the
    // end; distractor chains lie anywhere. Order within a chain is kept.
    const double start = c == 0 ? depth : rng.real();
    const auto later = random_positions(rng, hops, start);
    s.needles.push_back({"VAR " + vars[0] + " = " + value, start});
    for (int h = 1; h <= hops; ++h)
      s.needles.push_back({"VAR " + vars[h] + " = VAR " + vars[h - 1], later[h - 1]});
    if (c == 0) {
      asked_value = value;
      s.answers = vars;
    }
    all_chains.push_back({{"value", value}, {"variables", vars}});
  }
  s.preamble =
      "Memorize and track the chain(s) of variable assignment hidden in the following text.";
  s.question = "Question: Find all variables that are assigned the value " + asked_value +
               " in the text above.";
  s.answer_prefix = "Answer: According to the chain(s) of variable assignment in the text above, " +
                    std::to_string(hops + 1) + " variables are assigned the value " + asked_value +
                    ", they are:";
  s.grader = "all_values";
  s.max_new_tokens = 8 * (hops + 1);
  s.extra = {{"hops", hops}, {"chains", all_chains}};
  return s;
}

TaskSpec make_qa(Options& o, Rng& rng, double depth, const Tokenizer&) {
  TaskSpec s;
  const int hops = o.integer("hops", 1, 1, 2);
  const int distractors = o.integer("distractors", 4, 0, 32);
  if (hops != 1) s.variant = "2hop";
  if (distractors != 4) s.variant += (s.variant.empty() ? "d" : "-d") + std::to_string(distractors);
  std::set<std::string> people, towns;
  auto person = [&] { return fresh(rng, people, invented_name); };
  auto town = [&] { return fresh(rng, towns, invented_town); };
  s.filler = make_filler("essay", rng);
  const std::string subject = person();
  nlohmann::json facts = nlohmann::json::array();
  if (hops == 1) {
    const std::string home = town();
    s.needles.push_back({subject + " was born in the town of " + home + ".", depth});
    s.question = "In which town was " + subject + " born?";
    s.answer_prefix = subject + " was born in the town of";
    s.answers = {home};
  } else {
    // Two facts to chain: who the mentor is, and where the mentor was born.
    const std::string mentor = person(), home = town();
    s.needles.push_back({"The mentor of " + subject + " was " + mentor + ".", depth});
    s.needles.push_back({mentor + " was born in the town of " + home + ".", rng.real()});
    s.question = "In which town was the mentor of " + subject + " born?";
    s.answer_prefix = "The mentor of " + subject + " was born in the town of";
    s.answers = {home};
    s.extra["bridge"] = mentor;
  }
  // Distractors: other people's birthplaces (and, for two hops, mentors), so
  // "a town named in the text" is not enough.
  for (int i = 0; i < distractors; ++i) {
    const std::string p = person();
    if (hops == 2 && i % 2 == 1) {
      s.needles.push_back({"The mentor of " + p + " was " + person() + ".", rng.real()});
    } else {
      s.needles.push_back({p + " was born in the town of " + town() + ".", rng.real()});
    }
  }
  for (const auto& n : s.needles) facts.push_back(n.text);
  s.preamble =
      "The following text contains facts about several people. Read it carefully; a question about "
      "one of "
      "them follows.";
  s.grader = "contains";
  s.max_new_tokens = 16;
  s.extra["hops"] = hops;
  s.extra["facts"] = facts;
  return s;
}

TaskSpec make_ppl(Options& o, Rng& rng, double, const Tokenizer&) {
  TaskSpec s;
  const std::string source = o.choice("source", {"reference", "essay"});
  if (source != "reference") s.variant = source;
  const Prose& prose = source == "essay" ? essay_prose() : reference_prose();
  std::vector<int64_t> starts;
  for (size_t i = 0; i < prose.sentences.size(); ++i)
    if (prose.starts_paragraph[i]) starts.push_back(static_cast<int64_t>(i));
  s.filler = std::make_unique<ProseFiller>(prose, rng.pick(starts));
  s.grader = "perplexity";
  s.max_new_tokens = 0;
  s.extra = {{"source", source == "essay" ? "gnu-standards" : "debian-reference-en"}};
  return s;
}

}  // namespace kvbench::datasets
