#include "datasets/instance.h"

#include <limits>

#include "datasets/grader.h"
#include "model/common/error.h"

namespace kvbench {

nlohmann::ordered_json to_json(const Instance& in) {
  nlohmann::ordered_json j;
  j["id"] = in.id;
  j["task"] = in.task;
  j["length"] = {{"requested", in.length.requested},
                 {"actual", in.length.actual},
                 {"question", in.length.question}};
  j["depth"] = {{"requested", in.depth.requested}, {"actual", in.depth.actual}};
  j["sample"] = in.sample;
  j["seed"] = in.seed;
  j["generator_version"] = in.generator_version;
  j["grader"] = in.grader;
  j["max_new_tokens"] = in.max_new_tokens;
  j["answers"] = in.answers;
  auto needles = nlohmann::ordered_json::array();
  for (const Span& s : in.needles) needles.push_back({s.begin, s.end});
  j["needles"] = needles;
  j["extra"] = nlohmann::ordered_json::parse(in.extra.dump());
  j["preamble"] = in.preamble;
  j["question"] = in.question;
  j["answer_prefix"] = in.answer_prefix;
  j["context"] = in.context;
  return j;
}

namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) throw InputError("an instance must be a JSON object");
  const auto it = j.find(name);
  if (it == j.end()) throw InputError(std::string("missing field '") + name + "'");
  return *it;
}

template <class T>
T get(const nlohmann::json& j, const char* name, const char* parent = nullptr) {
  const nlohmann::json& v = field(j, name);
  const std::string where = parent ? std::string(parent) + "." + name : std::string(name);
  try {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) throw InputError("");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) throw InputError("");
    } else if constexpr (std::is_integral_v<T>) {
      // In T's range, not wrapped (4294967297 read as an int is 1).
      if (!v.is_number_integer()) throw InputError("");
      const bool fits =
          v.is_number_unsigned()
              ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
              : v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                    (std::is_unsigned_v<T> ||
                     v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max()));
      if (!fits) throw InputError("field '" + where + "' is out of range (" + v.dump() + ")");
    }
    return v.get<T>();
  } catch (const InputError& e) {
    if (*e.what()) throw;
    throw InputError("field '" + where + "' has the wrong type (" + v.type_name() + ")");
  } catch (const std::exception&) {
    throw InputError("field '" + where + "' has the wrong type (" + v.type_name() + ")");
  }
}

}  // namespace

Instance instance_from_json(const nlohmann::json& j) {
  Instance in;
  in.id = get<std::string>(j, "id");
  in.task = get<std::string>(j, "task");
  const auto& len = field(j, "length");
  if (!len.is_object()) throw InputError("field 'length' must be an object");
  in.length.requested = get<int64_t>(len, "requested", "length");
  in.length.actual = get<int64_t>(len, "actual", "length");
  in.length.question = get<int64_t>(len, "question", "length");
  const auto& depth = field(j, "depth");
  if (!depth.is_object()) throw InputError("field 'depth' must be an object");
  in.depth.requested = get<double>(depth, "requested", "depth");
  in.depth.actual = get<double>(depth, "actual", "depth");
  in.sample = get<int>(j, "sample");
  in.seed = get<uint64_t>(j, "seed");
  in.generator_version = get<int>(j, "generator_version");
  in.grader = get<std::string>(j, "grader");
  if (!known_grader(in.grader))
    throw InputError("field 'grader': unknown grader '" + in.grader +
                     "' (graders: exact, contains, numeric, all_values, per_query, perplexity)");
  in.max_new_tokens = get<int>(j, "max_new_tokens");
  // The ranges a config allows for the same numbers (harness/run/experiment.cpp).
  if (in.max_new_tokens < 0 || in.max_new_tokens > 4096)
    throw InputError("field 'max_new_tokens' must be in [0, 4096], got " +
                     std::to_string(in.max_new_tokens));
  if (in.sample < 0) throw InputError("field 'sample' must be >= 0");
  if (in.length.requested < 0 || in.length.actual < 0 || in.length.question < 0)
    throw InputError("field 'length' must hold counts >= 0");
  const auto& answers = field(j, "answers");
  if (!answers.is_array()) throw InputError("field 'answers' must be an array of strings");
  for (const auto& a : answers) {
    if (!a.is_string()) throw InputError("field 'answers' must be an array of strings");
    in.answers.push_back(a.get<std::string>());
  }
  in.preamble = get<std::string>(j, "preamble");
  in.question = get<std::string>(j, "question");
  in.answer_prefix = get<std::string>(j, "answer_prefix");
  in.context = get<std::string>(j, "context");
  const auto& needles = field(j, "needles");
  if (!needles.is_array())
    throw InputError("field 'needles' must be an array of [begin, end] pairs");
  for (const auto& n : needles) {
    if (!n.is_array() || n.size() != 2 || !n[0].is_number_integer() || !n[1].is_number_integer())
      throw InputError("field 'needles' must be an array of [begin, end] pairs");
    const Span s{n[0].get<int64_t>(), n[1].get<int64_t>()};
    if (s.begin < 0 || s.end < s.begin || s.end > static_cast<int64_t>(in.context.size()))
      throw InputError("field 'needles': span [" + std::to_string(s.begin) + ", " +
                       std::to_string(s.end) + ") is outside the context (" +
                       std::to_string(in.context.size()) + " bytes)");
    in.needles.push_back(s);
  }
  if (j.contains("extra")) {
    in.extra = j["extra"];
    if (!in.extra.is_object()) throw InputError("field 'extra' must be an object");
  }
  if (in.depth.requested < 0 || in.depth.requested > 1)
    throw InputError("field 'depth.requested' must be in [0, 1]");
  return in;
}

}  // namespace kvbench
