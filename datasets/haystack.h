// Builds a context of an exact token length out of filler sentences with
// needle sentences inserted at requested depths (at the nearest sentence
// boundary), and maps the needles' byte spans to token spans.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/instance.h"
#include "datasets/text_source.h"
#include "model/tokenizer/tokenizer.h"

namespace kvbench::datasets {

// An unbounded stream of filler sentences: unit(0), unit(1), ...
class Filler {
 public:
  virtual ~Filler() = default;
  virtual std::string unit(int64_t i) const = 0;
  // Text put before unit i (i > 0): " " inside a paragraph or line, "\n" between.
  virtual std::string_view separator(int64_t i) const = 0;
  // Text put before a needle (and so after the unit preceding it).
  virtual std::string_view needle_separator() const { return " "; }
};

// RULER's noise: the five sentences cycled, one line per cycle. Needles get
// lines of their own, as in RULER (a needle inside a noise line is easier to
// overlook: SmolLM2 missed more pass keys at 4k that way).
class NoiseFiller final : public Filler {
 public:
  std::string unit(int64_t i) const override;
  std::string_view separator(int64_t i) const override;
  std::string_view needle_separator() const override { return "\n"; }
};

// Sentences of a prose source from sentence `start` on, wrapping around.
class ProseFiller final : public Filler {
 public:
  ProseFiller(const Prose& prose, int64_t start) : prose_(prose), start_(start) {}
  std::string unit(int64_t i) const override;
  std::string_view separator(int64_t i) const override;

 private:
  const Prose& prose_;
  int64_t start_;
};

// Units made by a function (e.g. a haystack of distractor needles), one per line.
class GeneratedFiller final : public Filler {
 public:
  explicit GeneratedFiller(std::function<std::string(int64_t)> make) : make_(std::move(make)) {}
  std::string unit(int64_t i) const override { return make_(i); }
  std::string_view separator(int64_t) const override { return "\n"; }
  std::string_view needle_separator() const override { return "\n"; }

 private:
  std::function<std::string(int64_t)> make_;
};

struct NeedleRequest {
  std::string text;  // one sentence
  double position;   // requested depth in [0, 1]
};

struct Haystack {
  std::string context;
  int64_t tokens = 0;                // context tokens (encoded alone, no BOS)
  std::vector<Span> needle_chars;    // [needles] byte spans, in request order
  std::vector<Span> needle_tokens;   // [needles] token spans in the context's own tokens
  std::vector<double> needle_depth;  // [needles] tokens before / (tokens - own tokens)
};

// Context of `target_tokens` tokens (within max(2, 0.5%) when the filler's
// sentences allow; always within 2%) with every needle at the sentence
// boundary nearest its requested depth. Throws InputError "length: ..." when
// the target cannot hold the needles.
Haystack build_haystack(const Tokenizer& tok, const Filler& filler,
                        const std::vector<NeedleRequest>& needles, int64_t target_tokens);

int64_t count_tokens(const Tokenizer& tok, std::string_view text);

// Byte offset where each token of encode(text) (no BOS, no specials) starts,
// plus text.size() at the end: [tokens + 1] (Tokenizer::encode_parts' starts).
std::vector<int64_t> token_offsets(const Tokenizer& tok, std::string_view text);
// The tokens whose bytes overlap `chars` (offsets from token_offsets).
Span tokens_covering(const std::vector<int64_t>& offsets, Span chars);

}  // namespace kvbench::datasets
