#include "datasets/prompt.h"

#include <algorithm>
#include <cassert>

#include "datasets/haystack.h"
#include "model/common/error.h"

namespace kvbench {
namespace {

// Placeholders no real text contains; the rendered template is cut at them.
constexpr std::string_view kContextMark = "\x01kvbench-context\x01";
constexpr std::string_view kQuestionMark = "\x01kvbench-question\x01";

void append(std::vector<int32_t>& out, const std::vector<int32_t>& ids) {
  out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace

Prompt build_prompt(const LlamaModel& model, const Instance& in, bool question_first) {
  const Tokenizer& tok = model.tokenizer();
  Prompt p;
  const bool has_question = !in.question.empty();
  std::string rendered;
  if (in.grader == "perplexity") {
    rendered = std::string(kContextMark);
  } else {
    std::string user = in.preamble.empty() ? "" : in.preamble + "\n\n";
    if (!has_question)
      user += kContextMark;
    else if (question_first)
      user += std::string(kQuestionMark) + "\n\n" + std::string(kContextMark);
    else
      user += std::string(kContextMark) + "\n\n" + std::string(kQuestionMark);
    rendered = model.chat_template().apply({{"user", user}}, /*add_generation_prompt=*/true) +
               in.answer_prefix;
  }
  const size_t c_at = rendered.find(kContextMark);
  const size_t q_at = has_question ? rendered.find(kQuestionMark) : std::string::npos;
  assert(c_at != std::string::npos &&
         (!has_question || in.grader == "perplexity" || q_at != std::string::npos));

  // Pieces in order: template text (specials parsed), context, question (plain text).
  struct Piece {
    size_t at, size;
    int kind;  // 0 template, 1 context, 2 question
  };
  std::vector<Piece> marks = {{c_at, kContextMark.size(), 1}};
  if (q_at != std::string::npos) marks.push_back({q_at, kQuestionMark.size(), 2});
  std::sort(marks.begin(), marks.end(), [](const Piece& a, const Piece& b) { return a.at < b.at; });
  size_t at = 0;
  bool first = true;
  auto encode_template = [&](std::string_view text) {
    append(p.tokens, tok.encode(text, /*add_bos=*/first, /*parse_special=*/true));
    first = false;
  };
  std::vector<int32_t> context_ids;
  for (const Piece& m : marks) {
    encode_template(std::string_view(rendered).substr(at, m.at - at));
    const int64_t begin = static_cast<int64_t>(p.tokens.size());
    if (m.kind == 1) {
      context_ids = tok.encode(in.context, false, false);
      append(p.tokens, context_ids);
      p.context_tokens = {begin, static_cast<int64_t>(p.tokens.size())};
    } else {
      append(p.tokens, tok.encode(in.question, false, false));
      p.question_tokens = {begin, static_cast<int64_t>(p.tokens.size())};
    }
    at = m.at + m.size;
  }
  if (at < rendered.size()) encode_template(std::string_view(rendered).substr(at));
  if (q_at == std::string::npos) p.question_tokens = {p.context_tokens.end, p.context_tokens.end};

  const auto offsets = datasets::token_offsets(tok, in.context, context_ids);
  for (const Span& n : in.needles) {
    const Span t = datasets::tokens_covering(offsets, n);
    p.needle_tokens.push_back({t.begin + p.context_tokens.begin, t.end + p.context_tokens.begin});
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

}  // namespace kvbench
