// Scores a model's answer to an instance, in [0, 1], by the instance's grader:
//   exact       the answer's first line equals an accepted answer
//   contains    an accepted answer occurs in the output as whole words
//   numeric     the first number in the output equals the answer (1,234 = 1234)
//   all_values  fraction of the required values that occur (1 = all of them)
//   per_query   mean over extra.queries of the fraction of that query's values found
// All compare normalized text: lower case, punctuation as spaces, runs of
// whitespace as one space, thousands separators dropped.
#pragma once

#include <string>
#include <string_view>

#include "datasets/instance.h"

namespace kvbench {

// Throws InputError for an unknown grader, and for "perplexity" instances
// (task ppl), which are scored by perplexity, not graded.
double grade(const Instance& instance, std::string_view model_output);

// Whether `name` is a grader above (or "perplexity"): instances are checked
// when read, so a bad one is refused before any cell of a run is written.
bool known_grader(const std::string& name);

// The normalization every grader applies (exposed for tests and reports).
std::string normalize_answer(std::string_view text);

}  // namespace kvbench
