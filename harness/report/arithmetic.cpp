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

}  // namespace kvbench
