#include "datasets/haystack.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <unordered_map>

#include "model/common/error.h"

namespace kvbench::datasets {

std::string NoiseFiller::unit(int64_t i) const { return std::string(kNoiseSentences[i % 5]); }
std::string_view NoiseFiller::separator(int64_t i) const { return i % 5 == 0 ? "\n" : " "; }

std::string ProseFiller::unit(int64_t i) const {
  const int64_t n = static_cast<int64_t>(prose_.sentences.size());
  return prose_.sentences[(start_ + i) % n];
}
std::string_view ProseFiller::separator(int64_t i) const {
  const int64_t n = static_cast<int64_t>(prose_.sentences.size());
  return prose_.starts_paragraph[(start_ + i) % n] ? "\n" : " ";
}

int64_t count_tokens(const Tokenizer& tok, std::string_view text) {
  return static_cast<int64_t>(tok.encode(text, /*add_bos=*/false, /*parse_special=*/false).size());
}

std::vector<int64_t> token_offsets(const Tokenizer& tok, std::string_view text) {
  std::vector<int64_t> off;
  const TextPart part{text, /*parse_special=*/false};
  tok.encode_parts({&part, 1}, /*add_bos=*/false, &off);
  off.push_back(static_cast<int64_t>(text.size()));
  return off;
}

Span tokens_covering(const std::vector<int64_t>& off, Span chars) {
  const int64_t n_tokens = static_cast<int64_t>(off.size()) - 1;
  // First token ending after chars.begin; first token starting at or after chars.end.
  const auto first = std::upper_bound(off.begin() + 1, off.end(), chars.begin) - (off.begin() + 1);
  const auto last = std::lower_bound(off.begin(), off.end() - 1, chars.end) - off.begin();
  return {std::min<int64_t>(first, n_tokens), std::min<int64_t>(last, n_tokens)};
}

namespace {

struct Layout {
  std::vector<int64_t> units;         // filler unit indices, in order
  std::vector<int64_t> needle_after;  // [needles] needle j goes after this many units
  int64_t last_unit_words = 0;        // > 0: the last unit is cut to its first N words
};

// The first `words` space-separated words of a sentence.
std::string first_words(const std::string& s, int64_t words) {
  size_t at = 0;
  for (int64_t w = 0; w < words; ++w) {
    at = s.find(' ', at + 1);
    if (at == std::string::npos) return s;
  }
  return s.substr(0, at);
}

std::string render(const Filler& filler, const std::vector<NeedleRequest>& needles,
                   const Layout& layout, std::vector<Span>& spans) {
  // Needles sorted by (boundary, request order) so equal boundaries keep order.
  std::vector<size_t> order(needles.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return layout.needle_after[a] < layout.needle_after[b];
  });
  std::string out;
  spans.assign(needles.size(), {});
  size_t next = 0;
  const int64_t n = static_cast<int64_t>(layout.units.size());
  // A needle on a line of its own (needle_separator "\n") keeps the line
  // after it too.
  const bool own_line = filler.needle_separator() == "\n";
  for (int64_t k = 0; k <= n; ++k) {
    bool after_needle = false;
    while (next < order.size() && layout.needle_after[order[next]] == k) {
      if (!out.empty()) out += filler.needle_separator();
      const std::string& t = needles[order[next]].text;
      spans[order[next]] = {static_cast<int64_t>(out.size()),
                            static_cast<int64_t>(out.size() + t.size())};
      out += t;
      ++next;
      after_needle = true;
    }
    if (k == n) break;
    const int64_t u = layout.units[k];
    if (!out.empty()) {
      if (after_needle && own_line)
        out += "\n";
      else if (k == 0)
        out += filler.needle_separator();
      else
        out += filler.separator(u);
    }
    out += k == n - 1 && layout.last_unit_words > 0
               ? first_words(filler.unit(u), layout.last_unit_words)
               : filler.unit(u);
  }
  return out;
}

}  // namespace

Haystack build_haystack(const Tokenizer& tok, const Filler& filler,
                        const std::vector<NeedleRequest>& needles, int64_t target) {
  if (target < 1)
    throw InputError("length: must be at least 1 token, got " + std::to_string(target));
  std::vector<int64_t> needle_tokens(needles.size());
  int64_t needles_total = 0;
  for (size_t j = 0; j < needles.size(); ++j) {
    assert(needles[j].position >= 0 && needles[j].position <= 1);
    needle_tokens[j] = count_tokens(tok, std::string(filler.needle_separator()) + needles[j].text);
    needles_total += needle_tokens[j];
  }
  const int64_t tolerance = std::max<int64_t>(2, target / 200);
  if (needles_total + (needles.empty() ? 0 : tolerance) > target)
    throw InputError("length: " + std::to_string(target) + " tokens cannot hold the needles (" +
                     std::to_string(needles_total) + " tokens) and some haystack around them");

  // Token counts of units with their separators, cached (units are pure
  // functions of their index).
  std::unordered_map<int64_t, int64_t> unit_cache;
  auto unit_tokens = [&](int64_t i) {
    const auto it = unit_cache.find(i);
    if (it != unit_cache.end()) return it->second;
    const int64_t t = count_tokens(tok, std::string(filler.separator(i)) + filler.unit(i));
    unit_cache.emplace(i, t);
    return t;
  };

  Haystack h;
  int64_t budget = target - needles_total;
  for (int attempt = 0; attempt < 6; ++attempt) {
    // Whole units in order; near the end, units too long for what is left are
    // skipped in favour of later, shorter ones, so the length comes out exact
    // even with long prose sentences.
    Layout layout;
    std::vector<int64_t> cum{0};  // tokens of the first k chosen units
    int64_t i = 0, skipped = 0;
    while (cum.back() < budget && skipped < 200) {
      const int64_t t = unit_tokens(i);
      if (cum.back() + t <= budget) {
        layout.units.push_back(i);
        cum.push_back(cum.back() + t);
      } else if (budget - cum.back() <= tolerance / 2) {
        break;
      } else {
        ++skipped;
      }
      ++i;
    }
    // No whole sentence fits what is left (a coarse vocabulary, a short
    // context): end with the first words of the next one.
    if (budget - cum.back() > tolerance / 2) {
      const std::string sep(filler.separator(i)), unit = filler.unit(i);
      int64_t words = 0, words_tokens = 0;
      for (int64_t w = 1;; ++w) {
        const std::string part = first_words(unit, w);
        const int64_t t = count_tokens(tok, sep + part);
        if (cum.back() + t > budget) break;
        words = w;
        words_tokens = t;
        if (part.size() == unit.size()) break;
      }
      if (words > 0) {
        layout.units.push_back(i);
        layout.last_unit_words = words;
        cum.push_back(cum.back() + words_tokens);
      }
    }
    // Needles in order of requested depth; each at the boundary whose token
    // offset (counting the needles placed before it) is nearest the target
    // offset depth x (context - needle).
    std::vector<size_t> order(needles.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return needles[a].position < needles[b].position; });
    layout.needle_after.assign(needles.size(), 0);
    const int64_t n_units = static_cast<int64_t>(layout.units.size());
    const int64_t total = cum.back() + needles_total;
    int64_t lo = 0, placed_tokens = 0;
    for (size_t j : order) {
      const double want = needles[j].position * static_cast<double>(total - needle_tokens[j]);
      int64_t best = lo;
      double best_err = 1e300;
      for (int64_t k = lo; k <= n_units; ++k) {
        const double err = std::abs(static_cast<double>(cum[k] + placed_tokens) - want);
        if (err < best_err) {
          best_err = err;
          best = k;
        }
      }
      layout.needle_after[j] = best;
      lo = best;
      placed_tokens += needle_tokens[j];
    }
    std::vector<Span> spans;
    std::string text = render(filler, needles, layout, spans);
    const auto ids = tok.encode(text, false, false);
    const int64_t actual = static_cast<int64_t>(ids.size());
    h.context = std::move(text);
    h.tokens = actual;
    h.needle_chars = spans;
    if (std::abs(actual - target) <= tolerance) break;
    budget += target - actual;  // token counts are not quite additive: correct and retry
  }
  if (std::abs(h.tokens - target) > std::max<int64_t>(tolerance, target / 50))
    throw InputError("length: cannot build a context of " + std::to_string(target) +
                     " tokens (got " + std::to_string(h.tokens) + ")");
  const auto offsets = token_offsets(tok, h.context);
  for (size_t j = 0; j < needles.size(); ++j) {
    const Span t = tokens_covering(offsets, h.needle_chars[j]);
    h.needle_tokens.push_back(t);
    const int64_t rest = h.tokens - t.size();
    h.needle_depth.push_back(rest > 0 ? static_cast<double>(t.begin) / static_cast<double>(rest)
                                      : 0.0);
  }
  return h;
}

}  // namespace kvbench::datasets
