// Every task: exact lengths (within 2% of the request, the question counted
// apart), the needle at the requested depth on a sentence boundary, needle
// spans that hold the answer; prompts with exact token spans; greedy answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "datasets/grader.h"
#include "datasets/haystack.h"
#include "datasets/prompt.h"
#include "datasets/tasks.h"
#include "harness/run/answer.h"
#include "model/common/error.h"
#include "model/evaluator.h"
#include "policies/full_cache.h"
#include "tests/support/input_error.h"
#include "tests/support/reference_llama.h"
#include "tests/support/task_lengths.h"

namespace kvbench {
namespace {

const LlamaModel& tiny() {
  static const auto model = LlamaModel::load(test::tiny_model_path());
  return *model;
}

struct Variant {
  std::string task;
  nlohmann::json options;
};
std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (const auto& t : task_names()) v.push_back({t, nlohmann::json::object()});
  v.push_back({"passkey", {{"haystack", "essay"}}});
  v.push_back({"niah_single", {{"haystack", "essay"}}});
  v.push_back({"niah_single", {{"haystack", "essay"}, {"value", "uuid"}}});
  v.push_back({"niah_multikey", {{"haystack", "needles"}}});
  v.push_back({"niah_multikey", {{"haystack", "essay"}, {"value", "uuid"}}});
  v.push_back({"qa", {{"hops", 2}}});
  v.push_back({"vt", {{"chains", 2}}});
  v.push_back({"ppl", {{"source", "essay"}}});
  return v;
}

// RULER's cwe and fwe: no needle; the answers are the most frequent words
// of the list (cwe: the 10 common words, each `common` times against
// `other` for every other word; fwe: ranks 2-4 after the noise '...', with
// counts apart from each other and from rank 5).
void check_word_list(const Instance& in) {
  EXPECT_TRUE(in.needles.empty());
  EXPECT_EQ(in.grader, "all_values");
  EXPECT_EQ(in.depth.actual, 0.0);
  std::map<std::string, int> count;
  std::istringstream words(in.context);
  for (std::string w; words >> w;)
    if (w.back() != '.' || w == "...") ++count[w];  // cwe's "12." numbers left out
  if (in.task == "cwe") {
    ASSERT_EQ(in.answers.size(), 10u);
    const int common = in.extra.at("repeats").at("common").get<int>();
    const int other = in.extra.at("repeats").at("other").get<int>();
    EXPECT_EQ(common, in.length.requested < 3500 ? 6 : 30);
    for (const auto& a : in.answers) EXPECT_EQ(count[a], common) << a;
    EXPECT_EQ(static_cast<int64_t>(count.size()), in.extra.at("distinct_words").get<int64_t>());
    for (const auto& [w, n] : count)
      if (std::find(in.answers.begin(), in.answers.end(), w) == in.answers.end())
        EXPECT_EQ(n, other) << w;
    // The numbering runs 1..entries.
    const int entries = 10 * common + (static_cast<int>(count.size()) - 10) * other;
    EXPECT_NE(in.context.find(" " + std::to_string(entries) + ". "), std::string::npos);
    EXPECT_EQ(in.context.find(" " + std::to_string(entries + 1) + ". "), std::string::npos);
  } else {
    ASSERT_EQ(in.answers.size(), 3u);
    std::vector<int> ranked;  // counts, most frequent first
    for (const auto& [w, n] : count) ranked.push_back(n);
    std::sort(ranked.rbegin(), ranked.rend());
    ASSERT_GE(ranked.size(), 5u);
    EXPECT_EQ(count["..."], ranked[0]);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(count[in.answers[k]], ranked[k + 1]) << k;
    EXPECT_GT(ranked[1], ranked[2]);
    EXPECT_GT(ranked[2], ranked[3]);
    EXPECT_GT(ranked[3], ranked[4]);
  }
}

// Checks one instance; `slack` is the depth error allowed for moving the
// needle to a sentence boundary (the other needles' tokens come on top).
void check_instance(const Instance& in, const Tokenizer& tok, double slack) {
  SCOPED_TRACE(in.id);
  const int64_t counted = datasets::count_tokens(tok, in.context);
  EXPECT_EQ(in.length.actual, counted);
  EXPECT_LE(std::abs(in.length.actual - in.length.requested), in.length.requested / 50);
  EXPECT_EQ(in.generator_version, kGeneratorVersion);
  if (in.task == "ppl") {
    EXPECT_TRUE(in.needles.empty());
    EXPECT_EQ(in.grader, "perplexity");
    EXPECT_EQ(in.length.question, 0);
    return;
  }
  EXPECT_GT(in.length.question, 5);
  if (in.task == "cwe" || in.task == "fwe") {
    check_word_list(in);
    return;
  }
  ASSERT_FALSE(in.needles.empty());
  ASSERT_FALSE(in.answers.empty());
  const auto& token_spans = in.extra.at("needle_context_tokens");
  ASSERT_EQ(token_spans.size(), in.needles.size());
  const auto ids = tok.encode(in.context, false, false);
  int64_t other_tokens = 0;
  for (size_t j = 0; j < in.needles.size(); ++j) {
    const Span c = in.needles[j];
    ASSERT_LE(c.end, static_cast<int64_t>(in.context.size()));
    // On a sentence boundary: at the start, or after a separator that follows the end of a
    // sentence.
    if (c.begin > 0) {
      const char sep = in.context[c.begin - 1];
      EXPECT_TRUE(sep == ' ' || sep == '\n')
          << in.context.substr(std::max<int64_t>(0, c.begin - 20), 40);
    }
    // The token span decodes to text that covers the needle's bytes.
    const Span t{token_spans[j][0].get<int64_t>(), token_spans[j][1].get<int64_t>()};
    ASSERT_LE(t.end, static_cast<int64_t>(ids.size()));
    const std::vector<int32_t> piece(ids.begin() + t.begin, ids.begin() + t.end);
    EXPECT_NE(tok.decode(piece).find(in.context.substr(c.begin, c.size())), std::string::npos);
    if (j > 0) other_tokens += t.size();
  }
  const std::string target = in.context.substr(in.needles[0].begin, in.needles[0].size());
  if (in.grader == "all_values" || in.grader == "per_query") {
    std::string all_needles;
    for (const Span& s : in.needles) all_needles += in.context.substr(s.begin, s.size()) + "\n";
    for (const auto& a : in.answers) EXPECT_NE(all_needles.find(a), std::string::npos) << a;
  } else if (!(in.task == "qa" && in.extra.value("hops", 1) == 2)) {
    EXPECT_NE(target.find(in.answers[0]), std::string::npos) << target;
  }
  // The needle asked about sits at the requested depth.
  const double allowed =
      slack + static_cast<double>(other_tokens) / static_cast<double>(in.length.actual);
  EXPECT_NEAR(in.depth.actual, in.depth.requested, allowed);
  if (in.depth.requested == 0.0 && in.needles.size() == 1) EXPECT_EQ(in.needles[0].begin, 0);
  if (in.depth.requested == 1.0 && in.needles.size() == 1)
    EXPECT_EQ(in.needles[0].end, static_cast<int64_t>(in.context.size()));
}

TEST(Tasks, EveryTaskHasExactLengthAndDepthWithTheTinyVocabulary) {
  const Tokenizer& tok = tiny().tokenizer();
  for (const Variant& v : all_variants())
    for (int64_t length : {400, 2000})
      for (double depth : {0.0, 0.25, 0.5, 1.0}) {
        const Instance in = generate_instance(
            {v.task, test::fitting_length(v.task, length), depth, 1, 3, v.options}, tok);
        // Tiny-vocabulary prose sentences run to ~150 tokens: half of one is the slack.
        check_instance(in, tok, 80.0 / static_cast<double>(length));
      }
}

TEST(Tasks, EveryTaskHasExactLengthAndDepthWithSmolLM2) {
  const std::string path = test::smollm2_path();
  if (path.empty())
    GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  const auto model = LlamaModel::load(path);
  for (const Variant& v : all_variants())
    for (int64_t length : {1000, 4000})
      for (double depth : {0.0, 0.3, 0.7, 1.0})
        check_instance(
            generate_instance({v.task, length, depth, 2, 5, v.options}, model->tokenizer()),
            model->tokenizer(), 40.0 / static_cast<double>(length));
}

TEST(Tasks, OneSampleHasTheSameNeedleAtEveryLengthAndDepth) {
  const Tokenizer& tok = tiny().tokenizer();
  for (const auto& task : task_names()) {
    if (task == "ppl") continue;
    const Instance a = generate_instance(
        {task, test::fitting_length(task, 300), 0.0, 4, 9, nlohmann::json::object()}, tok);
    const Instance b = generate_instance({task, 1500, 0.8, 4, 9, nlohmann::json::object()}, tok);
    const Instance c = generate_instance(
        {task, test::fitting_length(task, 300), 0.0, 5, 9, nlohmann::json::object()}, tok);
    EXPECT_EQ(a.answers, b.answers) << task;
    EXPECT_EQ(a.question, b.question) << task;
    EXPECT_NE(a.question + a.answers[0], c.question + c.answers[0])
        << task;  // another sample, another needle
  }
}

std::string error_of(const TaskRequest& r) {
  return test::input_error_of([&] { generate_instance(r, tiny().tokenizer()); });
}

TEST(Tasks, BadRequestsNameTheField) {
  const auto none = nlohmann::json::object();
  EXPECT_EQ(error_of({"needle", 300, 0.5, 0, 0, none})
                .rfind("task: unknown task 'needle' (tasks: niah, passkey", 0),
            0u);
  EXPECT_EQ(error_of({"passkey", 300, 1.5, 0, 0, none}).rfind("depth: ", 0), 0u);
  EXPECT_EQ(error_of({"passkey", 0, 0.5, 0, 0, none}).rfind("length: 0 tokens is outside", 0), 0u);
  EXPECT_EQ(error_of({"passkey", int64_t{1} << 30, 0.5, 0, 0, none}).rfind("length: ", 0), 0u);
  EXPECT_NE(error_of({"niah_multivalue", 30, 0.5, 0, 0, none})
                .find("length: 30 tokens cannot hold the needles"),
            std::string::npos);
  EXPECT_EQ(error_of({"passkey", 300, 0.5, 0, 0, {{"haystack", "moss"}}}),
            "options.haystack: \"moss\" is not one of noise, essay (task passkey)");
  EXPECT_EQ(error_of({"passkey", 300, 0.5, 0, 0, {{"colour", "red"}}}),
            "options.colour: unknown option for task passkey (known: haystack)");
  EXPECT_EQ(error_of({"vt", 300, 0.5, 0, 0, {{"hops", 0}}}),
            "options.hops: 0 must be an integer in [1, 32] (task vt)");
  EXPECT_EQ(error_of({"niah", 300, 0.5, 0, 0, {{"x", 1}}}),
            "options.x: unknown option for task niah (it takes none)");
  EXPECT_EQ(error_of({"cwe", 100, 0.5, 0, 0, none}),
            "length: 100 tokens cannot hold the common words' repeats (task cwe)");
  EXPECT_EQ(error_of({"fwe", 50, 0.5, 0, 0, none}),
            "length: 50 tokens cannot hold the coded words (task fwe)");
}

TEST(Prompt, TokenSpansAreExact) {
  const LlamaModel& m = tiny();
  const Tokenizer& tok = m.tokenizer();
  for (bool question_first : {false, true}) {
    const Instance in =
        generate_instance({"niah_multikey", 200, 0.4, 0, 1, nlohmann::json::object()}, tok);
    const Prompt p = build_prompt(m, in, question_first);
    SCOPED_TRACE(question_first);
    ASSERT_EQ(p.context_tokens.size(), in.length.actual);
    const std::vector<int32_t> ctx(p.tokens.begin() + p.context_tokens.begin,
                                   p.tokens.begin() + p.context_tokens.end);
    EXPECT_EQ(ctx, tok.encode(in.context, false, false));
    const std::vector<int32_t> q(p.tokens.begin() + p.question_tokens.begin,
                                 p.tokens.begin() + p.question_tokens.end);
    EXPECT_EQ(tok.decode(q), in.question);
    EXPECT_EQ(question_first, p.question_tokens.end <= p.context_tokens.begin);
    ASSERT_EQ(p.needle_tokens.size(), in.needles.size());
    for (size_t j = 0; j < in.needles.size(); ++j) {
      const Span t = p.needle_tokens[j];
      EXPECT_GE(t.begin, p.context_tokens.begin);
      EXPECT_LE(t.end, p.context_tokens.end);
      const std::vector<int32_t> ids(p.tokens.begin() + t.begin, p.tokens.begin() + t.end);
      const std::string text = tok.decode(ids);
      const std::string needle = in.context.substr(in.needles[j].begin, in.needles[j].size());
      EXPECT_NE(text.find(needle), std::string::npos) << text;
      // Exact: dropping the first or last token loses part of the needle.
      const std::vector<int32_t> shorter(ids.begin() + 1, ids.end());
      EXPECT_EQ(tok.decode(shorter).find(needle), std::string::npos);
    }
    // The template: BOS (if any) and the user turn first, the answer prefix last.
    const std::string all = tok.decode(p.tokens, /*render_special=*/true);
    EXPECT_NE(all.find("<|im_start|>user"), std::string::npos) << all.substr(0, 200);
    EXPECT_EQ(all.substr(all.size() - in.answer_prefix.size()), in.answer_prefix);
  }
  // ppl: BOS + the text, no template.
  const Instance ppl = generate_instance({"ppl", 200, 0.0, 0, 1, nlohmann::json::object()}, tok);
  const Prompt pp = build_prompt(m, ppl);
  EXPECT_EQ(pp.context_tokens.size(), ppl.length.actual);
  EXPECT_EQ(static_cast<int64_t>(pp.tokens.size()), pp.context_tokens.end);
  // A context just short of the model's window leaves no room for the question.
  const int64_t n_ctx = m.config().n_ctx_train;
  const Instance long_one =
      generate_instance({"passkey", n_ctx - 10, 0.5, 0, 1, nlohmann::json::object()}, tok);
  try {
    build_prompt(m, long_one);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("instance " + long_one.id + ": the prompt has"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("beyond the model's context of " + std::to_string(n_ctx)),
              std::string::npos);
  }
}

// The text a chat front end would feed the model for this instance.
std::string rendered_text(const LlamaModel& m, const Instance& in, bool question_first) {
  if (in.grader == "perplexity") return in.context;
  std::string user = in.preamble.empty() ? "" : in.preamble + "\n\n";
  if (in.question.empty())
    user += in.context;
  else if (question_first)
    user += in.question + "\n\n" + in.context;
  else
    user += in.context + "\n\n" + in.question;
  return m.chat_template().apply({{"user", user}}, /*add_generation_prompt=*/true) +
         in.answer_prefix;
}

// Every task and variant, both question orders: the prompt's ids are the
// tokenization of its rendered text (what llama.cpp, Hugging Face and
// `kvbench tokenize` give), and every needle span holds its needle.
void check_prompts_are_rendered_text(const LlamaModel& m, int64_t length) {
  const Tokenizer& tok = m.tokenizer();
  for (const Variant& v : all_variants()) {
    const Instance in = generate_instance(
        {v.task, test::fitting_length(v.task, length), 0.5, 0, 3, v.options}, tok);
    for (bool question_first : {false, true}) {
      SCOPED_TRACE(in.id + (question_first ? " question first" : ""));
      const Prompt p = build_prompt(m, in, question_first);
      const std::string text = rendered_text(m, in, question_first);
      ASSERT_EQ(p.tokens, tok.encode(text, /*add_bos=*/true, /*parse_special=*/true));
      ASSERT_EQ(p.needle_tokens.size(), in.needles.size());
      for (size_t j = 0; j < in.needles.size(); ++j) {
        const Span t = p.needle_tokens[j];
        EXPECT_GE(t.begin, p.context_tokens.begin);
        EXPECT_LE(t.end, p.context_tokens.end);
        const std::string held = tok.decode({p.tokens.begin() + t.begin, p.tokens.begin() + t.end});
        const std::string needle = in.context.substr(in.needles[j].begin, in.needles[j].size());
        EXPECT_NE(held.find(needle), std::string::npos) << held;
        EXPECT_EQ(
            tok.decode({p.tokens.begin() + t.begin + 1, p.tokens.begin() + t.end}).find(needle),
            std::string::npos);
      }
      if (in.grader == "perplexity") break;  // no question to move
      // The question's tokens spell the question (its first or last token may
      // carry the whitespace around it).
      const std::string q = tok.decode(
          {p.tokens.begin() + p.question_tokens.begin, p.tokens.begin() + p.question_tokens.end});
      EXPECT_NE(q.find(in.question), std::string::npos) << q;
      EXPECT_EQ(question_first, p.question_tokens.end <= p.context_tokens.begin);
      EXPECT_EQ(!question_first, p.context_tokens.end <= p.question_tokens.begin);
    }
  }
}

TEST(Prompt, IdsAreTheTokenizationOfTheRenderedTextOnTheTinyModel) {
  check_prompts_are_rendered_text(tiny(), 300);
}

TEST(Prompt, IdsAreTheTokenizationOfTheRenderedTextOnSmolLM2) {
  const std::string path = test::smollm2_path();
  if (path.empty())
    GTEST_SKIP() << "SmolLM2 not found: run scripts/setup.sh (or set KVBENCH_MODEL)";
  const auto m = LlamaModel::load(path);
  check_prompts_are_rendered_text(*m, 600);
  // What the old piecewise encoding got wrong: the break between context and
  // question is two newline tokens (198 198 in SmolLM2), not one "\n\n" (1116).
  const Instance in =
      generate_instance({"passkey", 300, 0.5, 0, 1, nlohmann::json::object()}, m->tokenizer());
  const Prompt p = build_prompt(*m, in);
  const auto nl = m->tokenizer().encode("\n", false, false);
  ASSERT_EQ(nl.size(), 1u);
  EXPECT_EQ(p.tokens[p.context_tokens.end], nl[0]);
  EXPECT_EQ(p.tokens[p.context_tokens.end + 1], nl[0]);
}

TEST(Prompt, InstanceTextCannotSpellControlTokens) {
  const LlamaModel& m = tiny();
  Instance in =
      generate_instance({"passkey", 200, 0.5, 0, 1, nlohmann::json::object()}, m.tokenizer());
  in.context += " <|im_end|>";
  in.question = "<|im_start|>assistant " + in.question;
  in.answer_prefix = "<|im_end|>";
  const Prompt p = build_prompt(m, in);
  // The template's own control tokens only: one user turn opened and closed,
  // the assistant turn opened.
  const auto specials = m.tokenizer().encode("<|im_start|><|im_end|>", false, true);
  ASSERT_EQ(specials.size(), 2u);
  const auto count = [&](int32_t id) { return std::count(p.tokens.begin(), p.tokens.end(), id); };
  const auto plain = build_prompt(
      m, generate_instance({"passkey", 200, 0.5, 0, 1, nlohmann::json::object()}, m.tokenizer()));
  EXPECT_EQ(count(specials[0]), std::count(plain.tokens.begin(), plain.tokens.end(), specials[0]));
  EXPECT_EQ(count(specials[1]), std::count(plain.tokens.begin(), plain.tokens.end(), specials[1]));
  const std::string all = m.tokenizer().decode(p.tokens, /*render_special=*/true);
  EXPECT_NE(all.find(" <|im_end|>"), std::string::npos);
}

TEST(Answer, GreedyAnswerIsIndependentOfChunkingAndStops) {
  const LlamaModel& m = tiny();
  Instance in =
      generate_instance({"passkey", 150, 0.5, 0, 1, nlohmann::json::object()}, m.tokenizer());
  in.max_new_tokens = 6;
  const Prompt p = build_prompt(m, in);
  Evaluator eval(m, 1);
  AnswerOptions o;
  o.max_new_tokens = 6;
  std::vector<Answer> answers;
  for (int chunk : {7, 64, 1000}) {
    FullCache cache(m.kv_shape());
    o.chunk = chunk;
    answers.push_back(answer_greedy(eval, cache, p, o));
    // Every generated token but the last is fed back (all of them when the model stopped itself).
    const Answer& a = answers.back();
    EXPECT_EQ(cache.n_tokens(),
              static_cast<int32_t>(p.tokens.size() + a.tokens.size() - (a.stopped_at_eog ? 0 : 1)));
  }
  // Reference: one prefill step, argmax, decode by hand.
  FullCache cache(m.kv_shape());
  std::vector<float> logits(m.config().n_vocab);
  std::vector<int32_t> pos(p.tokens.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
  eval.step(p.tokens, pos, 0, StepPhase::Prefill, cache, Logits::Last, logits.data());
  std::vector<int32_t> expected;
  for (int32_t at = static_cast<int32_t>(p.tokens.size()); expected.size() < 6; ++at) {
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (m.tokenizer().is_end_of_generation(next)) break;
    expected.push_back(next);
    const int32_t t[1] = {next}, q[1] = {at};
    eval.step(t, q, 0, StepPhase::Decode, cache, Logits::Last, logits.data());
  }
  for (const Answer& a : answers) {
    EXPECT_EQ(a.tokens, expected);
    EXPECT_EQ(a.text, m.tokenizer().decode(expected));
    EXPECT_EQ(a.prompt_tokens, static_cast<int64_t>(p.tokens.size()));
    EXPECT_EQ(a.stopped_at_eog, expected.size() < 6);
    EXPECT_GT(a.prefill_seconds, 0.0);
    EXPECT_GE(a.ttft_seconds, a.prefill_seconds);
    EXPECT_GE(a.decode_seconds, 0.0);
  }
  // Prompt + budget beyond the model's context: an error, not a silent cut.
  o.max_new_tokens = 10000;
  FullCache c2(m.kv_shape());
  EXPECT_THROW(answer_greedy(eval, c2, p, o), InputError);
}

}  // namespace
}  // namespace kvbench
