#include "harness/report/arithmetic.h"

namespace kvbench {

std::string arithmetic_text(const nlohmann::json& config) {
  const nlohmann::json* d =
      config.is_object() && config.contains("decoding") && config["decoding"].is_object()
          ? &config["decoding"]
          : nullptr;
  const bool exact =
      d && d->contains("exact") && (*d)["exact"].is_boolean() && (*d)["exact"].get<bool>();
  std::string attention = "f32";
  if (d && d->contains("attention") && (*d)["attention"].is_string())
    attention = (*d)["attention"].get<std::string>().substr(0, 16);
  return std::string(exact ? "exact (f32 activations)" : "fast (8-bit activations)") + ", " +
         attention + " attention";
}

std::string decoding_text(const nlohmann::json& config) {
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& d =
      config.is_object() && config.contains("decoding") && config["decoding"].is_object()
          ? config["decoding"]
          : empty;
  const auto integer = [&](const char* k, int64_t dflt) {
    return d.contains(k) && d[k].is_number_integer() ? d[k].get<int64_t>() : dflt;
  };
  const bool agnostic = d.contains("protocol") && d["protocol"] == "query_agnostic";
  const bool first =
      d.contains("question_first") && d["question_first"].is_boolean() && d["question_first"];
  const int64_t max_new = integer("max_new_tokens", 0);
  return std::string(agnostic ? "query-agnostic" : "query-aware") + ", chunk " +
         std::to_string(integer("chunk", 512)) + ", " +
         (max_new > 0 ? std::to_string(max_new) + " new tokens" : "task's answer budget") + ", " +
         (first ? "question first" : "question last");
}

}  // namespace kvbench
