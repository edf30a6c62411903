#include "datasets/grader.h"

#include <vector>

#include "model/common/error.h"

namespace kvbench {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// s[i] is the comma of "71,432": a digit before, exactly three after.
bool is_thousands_separator(std::string_view s, size_t i) {
  return s[i] == ',' && i > 0 && is_digit(s[i - 1]) && i + 3 < s.size() && is_digit(s[i + 1]) &&
         is_digit(s[i + 2]) && is_digit(s[i + 3]) && (i + 4 >= s.size() || !is_digit(s[i + 4]));
}

// " the answer " style padding makes word-boundary search a plain find.
bool contains_words(const std::string& haystack_norm, const std::string& needle_norm) {
  if (needle_norm.empty()) return false;
  return (" " + haystack_norm + " ").find(" " + needle_norm + " ") != std::string::npos;
}

// Numbers in the text, canonical: thousands separators and a ".0..." tail dropped.
std::vector<std::string> numbers_in(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    if (!is_digit(s[i]) || (i > 0 && is_alnum(s[i - 1]))) {
      ++i;
      continue;
    }
    std::string n;
    size_t j = i;
    while (j < s.size()) {
      if (is_digit(s[j])) {
        n += s[j++];
      } else if (is_thousands_separator(s, j)) {
        ++j;  // "71,432": a thousands separator
      } else {
        break;
      }
    }
    if (j + 1 < s.size() && s[j] == '.' && is_digit(s[j + 1])) {  // decimals: keep unless all zeros
      size_t k = j + 1;
      std::string frac;
      while (k < s.size() && is_digit(s[k])) frac += s[k++];
      while (!frac.empty() && frac.back() == '0') frac.pop_back();  // 3.50 = 3.5, 7.0 = 7
      if (!frac.empty()) n += "." + frac;
      j = k;
    }
    if (j < s.size() && is_alnum(s[j])) {  // "12ab": not a number on its own
      i = j;
      continue;
    }
    out.push_back(n);
    i = j;
  }
  return out;
}

double fraction_found(const std::string& output_norm, const std::vector<std::string>& values) {
  if (values.empty()) return 0.0;
  int found = 0;
  for (const auto& v : values) found += contains_words(output_norm, normalize_answer(v)) ? 1 : 0;
  return static_cast<double>(found) / static_cast<double>(values.size());
}

std::string strip_article(std::string s) {
  for (const char* a : {"the ", "a ", "an "}) {
    const std::string art = a;
    if (s.rfind(art, 0) == 0) return s.substr(art.size());
  }
  return s;
}

}  // namespace

std::string normalize_answer(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    // Thousands separator: digit , ddd (not followed by another digit).
    if (is_thousands_separator(text, i)) continue;
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool keep = is_alnum(c) || static_cast<unsigned char>(c) >= 0x80;
    if (!keep) c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool known_grader(const std::string& g) {
  return g == "exact" || g == "contains" || g == "numeric" || g == "all_values" ||
         g == "per_query" || g == "perplexity";
}

double grade(const Instance& in, std::string_view output) {
  const std::string& g = in.grader;
  if (g == "perplexity")
    throw InputError("instance " + in.id + ": task " + in.task +
                     " is scored by perplexity, it has no answer to grade");
  const std::string out_norm = normalize_answer(output);
  if (g == "contains") {
    for (const auto& a : in.answers)
      if (contains_words(out_norm, normalize_answer(a))) return 1.0;
    return 0.0;
  }
  if (g == "exact") {
    std::string_view first = output;
    while (!first.empty() && (first.front() == '\n' || first.front() == ' '))
      first.remove_prefix(1);
    first = first.substr(0, first.find('\n'));
    const std::string line = strip_article(normalize_answer(first));
    for (const auto& a : in.answers)
      if (!line.empty() && line == strip_article(normalize_answer(a))) return 1.0;
    return 0.0;
  }
  if (g == "numeric") {
    const auto nums = numbers_in(output);
    for (const auto& a : in.answers) {
      const auto want = numbers_in(a);
      if (want.size() != 1) {  // not a number: fall back to whole-word match
        if (contains_words(out_norm, normalize_answer(a))) return 1.0;
        continue;
      }
      if (!nums.empty() && nums.front() == want.front()) return 1.0;
    }
    return 0.0;
  }
  if (g == "all_values") return fraction_found(out_norm, in.answers);
  if (g == "per_query") {
    const auto it = in.extra.find("queries");
    if (it == in.extra.end() || !it->is_array() || it->empty())
      return fraction_found(out_norm, in.answers);
    double sum = 0;
    for (const auto& q : *it) {
      std::vector<std::string> values;
      if (q.contains("values") && q["values"].is_array())
        for (const auto& v : q["values"])
          if (v.is_string()) values.push_back(v.get<std::string>());
      sum += fraction_found(out_norm, values);
    }
    return sum / static_cast<double>(it->size());
  }
  throw InputError("instance " + in.id + ": unknown grader '" + g +
                   "' (graders: exact, contains, numeric, all_values, per_query, perplexity)");
}

}  // namespace kvbench
