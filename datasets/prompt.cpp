#include "datasets/prompt.h"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "datasets/haystack.h"
#include "model/common/error.h"

namespace kvbench {
namespace {

// A placeholder no real text contains; the rendered template is cut at it.
constexpr std::string_view kUserMark = "\x01kvbench-user\x01";

// The tokens whose bytes overlap `chars`; for an empty range, the empty span
// at the first token starting at or after it.
Span covering(const std::vector<int64_t>& off, Span chars) {
  if (chars.size() > 0) return datasets::tokens_covering(off, chars);
  const int64_t at = std::lower_bound(off.begin(), off.end() - 1, chars.begin) - off.begin();
  return {at, at};
}

}  // namespace

Prompt build_prompt(const LlamaModel& model, const Instance& in, bool question_first,
                    bool cut_after_context) {
  const Tokenizer& tok = model.tokenizer();
  Prompt p;
  const bool has_question = !in.question.empty() && in.grader != "perplexity";

  // The prompt as parts of one text: the template's own text (its spellings
  // of control tokens parsed) around the user turn and the answer prefix,
  // which come from the instance and stay plain text, so an instance cannot
  // spell "<|im_end|>". The tokenizer encodes the parts as one text: the ids
  // are those of the rendered prompt, as llama.cpp or Hugging Face would
  // tokenize it, and the spans come from the tokens' byte offsets.
  std::vector<TextPart> parts;
  int64_t joined = 0;
  Span context_chars, question_chars;  // bytes in the joined text
  size_t context_part = 0;             // parts[context_part] is the context
  const auto add = [&](std::string_view text, bool special) {
    parts.push_back({text, special});
    joined += static_cast<int64_t>(text.size());
    return Span{joined - static_cast<int64_t>(text.size()), joined};
  };
  const auto add_context = [&] {
    context_part = parts.size();
    context_chars = add(in.context, false);
  };
  std::string rendered;
  if (in.grader == "perplexity") {
    add_context();  // BOS + the text, no template
  } else {
    rendered = model.chat_template().apply({{"user", std::string(kUserMark)}},
                                           /*add_generation_prompt=*/true);
    const size_t u_at = rendered.find(kUserMark);
    if (u_at == std::string::npos)
      throw InputError("the model's chat template does not place the user's message in the prompt");
    static constexpr std::string_view kBreak = "\n\n";
    add(std::string_view(rendered).substr(0, u_at), true);
    if (!in.preamble.empty()) {
      add(in.preamble, false);
      add(kBreak, false);
    }
    if (!has_question) {
      add_context();
    } else if (question_first) {
      question_chars = add(in.question, false);
      add(kBreak, false);
      add_context();
    } else {
      add_context();
      add(kBreak, false);
      question_chars = add(in.question, false);
    }
    add(std::string_view(rendered).substr(u_at + kUserMark.size()), true);
    add(in.answer_prefix, false);
  }

  // off[i]: where token i starts; off[n]: the end (datasets::tokens_covering).
  std::vector<int64_t> off;
  if (!cut_after_context) {
    p.tokens = tok.encode_parts(parts, /*add_bos=*/true, &off);
  } else {
    // Two texts, cut where the context ends (a snapshot's document is
    // prefilled before any question is known).
    if (question_first || in.grader == "perplexity")
      throw std::logic_error(
          "build_prompt: cut_after_context needs the question after the context");
    const size_t cut = context_part + 1;
    const std::span<const TextPart> all(parts);
    p.tokens = tok.encode_parts(all.first(cut), /*add_bos=*/true, &off);
    std::vector<int64_t> rest_off;
    const auto rest = tok.encode_parts(all.subspan(cut), /*add_bos=*/false, &rest_off);
    p.tokens.insert(p.tokens.end(), rest.begin(), rest.end());
    for (const int64_t o : rest_off) off.push_back(o + context_chars.end);
  }
  off.push_back(joined);
  p.context_tokens = covering(off, context_chars);
  if (!has_question) {
    p.question_tokens = {p.context_tokens.end, p.context_tokens.end};
  } else {
    p.question_tokens = covering(off, question_chars);
    // A token spanning the boundary (whitespace ending one and starting the
    // other) belongs to the one that comes first.
    if (question_first)
      p.context_tokens.begin = std::max(p.context_tokens.begin, p.question_tokens.end);
    else
      p.question_tokens.begin = std::max(p.question_tokens.begin, p.context_tokens.end);
  }
  for (const Span& n : in.needles) {
    const Span t = covering(off, {n.begin + context_chars.begin, n.end + context_chars.begin});
    p.needle_tokens.push_back(t);
  }
  const int64_t n_ctx = model.config().n_ctx_train;
  const int64_t need = static_cast<int64_t>(p.tokens.size()) + in.max_new_tokens;
  if (n_ctx > 0 && need > n_ctx)
    throw InputError("instance " + in.id + ": the prompt has " + std::to_string(p.tokens.size()) +
                     " tokens (context " + std::to_string(p.context_tokens.size()) + ") and " +
                     std::to_string(in.max_new_tokens) +
                     " more may be generated, beyond the model's context of " +
                     std::to_string(n_ctx) + " tokens");
  return p;
}

TemplateIds chat_template_ids(const LlamaModel& model) {
  const std::string rendered = model.chat_template().apply({{"user", std::string(kUserMark)}},
                                                           /*add_generation_prompt=*/true);
  const size_t u_at = rendered.find(kUserMark);
  if (u_at == std::string::npos)
    throw InputError("the model's chat template does not place the user's message in the prompt");
  const std::string_view r(rendered);
  const TextPart head[] = {{r.substr(0, u_at), true}};
  const TextPart suffix[] = {{r.substr(u_at + kUserMark.size()), true}};
  TemplateIds ids;
  ids.head = model.tokenizer().encode_parts(head, /*add_bos=*/true, nullptr);
  ids.suffix = model.tokenizer().encode_parts(suffix, /*add_bos=*/false, nullptr);
  return ids;
}

}  // namespace kvbench
