#include "datasets/tasks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "datasets/task_spec.h"
#include "model/common/error.h"

namespace kvbench {

namespace datasets {

Options::Options(const nlohmann::json& options, std::string task)
    : options_(options), task_(std::move(task)) {
  if (!options_.is_object()) throw InputError("options: must be a JSON object");
}

std::string Options::choice(const std::string& name, const std::vector<std::string>& allowed) {
  used_.push_back(name);
  const auto it = options_.find(name);
  if (it == options_.end()) return allowed.front();
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  if (!it->is_string() ||
      std::find(allowed.begin(), allowed.end(), it->get<std::string>()) == allowed.end())
    throw InputError("options." + name + ": " + it->dump() + " is not one of " + list + " (task " +
                     task_ + ")");
  return it->get<std::string>();
}

int Options::integer(const std::string& name, int fallback, int lo, int hi) {
  used_.push_back(name);
  const auto it = options_.find(name);
  if (it == options_.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi)
    throw InputError("options." + name + ": " + it->dump() + " must be an integer in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "] (task " + task_ + ")");
  return it->get<int>();
}

void Options::check_all_used() const {
  for (const auto& [key, value] : options_.items()) {
    if (std::find(used_.begin(), used_.end(), key) != used_.end()) continue;
    std::string known;
    for (const auto& u : used_) known += (known.empty() ? "" : ", ") + u;
    throw InputError("options." + key + ": unknown option for task " + task_ +
                     (known.empty() ? " (it takes none)" : " (known: " + known + ")"));
  }
}

namespace {

using Maker = TaskSpec (*)(Options&, Rng&, double, const Tokenizer&);
struct TaskEntry {
  const char* name;
  Maker make;
};
constexpr TaskEntry kTasks[] = {
    {"niah", make_niah},
    {"passkey", make_passkey},
    {"niah_single", make_niah_single},
    {"niah_multikey", make_niah_multikey},
    {"niah_multivalue", make_niah_multivalue},
    {"niah_multiquery", make_niah_multiquery},
    {"vt", make_vt},
    {"qa", make_qa},
    {"ppl", make_ppl},
    {"cwe", make_cwe},
    {"fwe", make_fwe},
};

std::string format_depth(double depth) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::round(depth * 1000.0) / 10.0);
  return buf;
}

}  // namespace
}  // namespace datasets

std::vector<std::string> task_names() {
  std::vector<std::string> out;
  for (const auto& t : datasets::kTasks) out.emplace_back(t.name);
  return out;
}

Instance generate_instance(const TaskRequest& r, const Tokenizer& tok) {
  using namespace datasets;
  const TaskEntry* entry = nullptr;
  for (const auto& t : kTasks)
    if (r.task == t.name) entry = &t;
  if (!entry) {
    std::string names;
    for (const auto& t : kTasks) names += (names.empty() ? "" : ", ") + std::string(t.name);
    throw InputError("task: unknown task '" + r.task + "' (tasks: " + names + ")");
  }
  if (!(r.depth >= 0.0 && r.depth <= 1.0))
    throw InputError("depth: " + std::to_string(r.depth) + " is outside [0, 1]");
  constexpr int64_t kMaxLength = int64_t{1} << 20;
  if (r.length < 1 || r.length > kMaxLength)
    throw InputError("length: " + std::to_string(r.length) + " tokens is outside [1, " +
                     std::to_string(kMaxLength) + "]");
  if (r.sample < 0) throw InputError("sample: must be >= 0, got " + std::to_string(r.sample));

  // Content depends on (task, sample, seed) only: the same sample has the same
  // keys, values and haystack at every length and depth.
  Rng rng(hash_mix(hash_mix(hash_text(r.task), r.seed), static_cast<uint64_t>(r.sample)));
  Options options(r.options, r.task);
  TaskSpec spec = entry->make(options, rng, r.depth, tok);
  options.check_all_used();

  Haystack h;
  try {
    if (spec.build) {
      spec.build(spec, tok, r.length);
      h.context = std::move(spec.context);
      h.tokens = count_tokens(tok, h.context);
    } else {
      h = build_haystack(tok, *spec.filler, spec.needles, r.length);
    }
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (task " + r.task + ")");
  }

  Instance in;
  in.task = r.task;
  in.id = r.task + (spec.variant.empty() ? "" : ":" + spec.variant) + "-L" +
          std::to_string(r.length) + "-D" + format_depth(r.depth) + "-S" +
          std::to_string(r.sample) + "-R" + std::to_string(r.seed);
  in.preamble = std::move(spec.preamble);
  in.context = std::move(h.context);
  in.question = std::move(spec.question);
  in.answer_prefix = std::move(spec.answer_prefix);
  in.answers = std::move(spec.answers);
  in.needles = h.needle_chars;
  in.depth.requested = r.depth;
  in.depth.actual = h.needle_depth.empty() ? 0.0 : h.needle_depth[0];
  in.length.requested = r.length;
  in.length.actual = h.tokens;
  in.length.question = count_tokens(tok, in.preamble) + count_tokens(tok, in.question) +
                       count_tokens(tok, in.answer_prefix);
  in.sample = r.sample;
  in.seed = r.seed;
  in.generator_version = kGeneratorVersion;
  in.grader = std::move(spec.grader);
  in.max_new_tokens = spec.max_new_tokens;
  in.extra = std::move(spec.extra);
  if (!spec.variant.empty()) in.extra["variant"] = spec.variant;
  if (!r.options.empty()) in.extra["options"] = r.options;
  nlohmann::json tokens = nlohmann::json::array();
  for (const Span& t : h.needle_tokens) tokens.push_back({t.begin, t.end});
  in.extra["needle_context_tokens"] = tokens;  // in the context's own tokens (prompt.h shifts them)
  return in;
}

}  // namespace kvbench
