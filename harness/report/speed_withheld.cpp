#include "harness/report/speed_withheld.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench {

std::string checked_speed_reason(const std::string& reason) {
  if (reason.empty())
    throw InputError("--withhold-speed: give the reason the run's timings are not measurements");
  if (reason.size() > kMaxSpeedWithheldBytes)
    throw InputError("--withhold-speed: the reason is " + std::to_string(reason.size()) +
                     " bytes, more than " + std::to_string(kMaxSpeedWithheldBytes));
  if (!one_line_utf8(reason))
    throw InputError("--withhold-speed: '" + escaped_text(reason, 200) +
                     "': expected one line of UTF-8 text without control characters");
  return reason;
}

std::string speed_withheld(const nlohmann::json& meta) {
  return meta.contains("speed_withheld") && meta["speed_withheld"].is_string()
             ? meta["speed_withheld"].get<std::string>()
             : std::string();
}

std::vector<nlohmann::json> without_speed(std::vector<nlohmann::json> cells) {
  for (nlohmann::json& c : cells) {
    if (!c.contains("timing") || !c["timing"].is_object()) continue;
    nlohmann::json kept = nlohmann::json::object();
    if (c["timing"].contains("peak_rss_bytes"))
      kept["peak_rss_bytes"] = c["timing"]["peak_rss_bytes"];
    if (kept.empty())
      c.erase("timing");
    else
      c["timing"] = kept;
  }
  return cells;
}

void remove_speed_plots(const std::string& plots_dir) {
  // "speed" or "speed-<digits>", then ".png" or ".svg".
  const auto speed_plot = [](const std::filesystem::path& p) {
    const std::string stem = p.stem().string(), ext = p.extension().string();
    if ((ext != ".png" && ext != ".svg") || stem.rfind("speed", 0) != 0) return false;
    const std::string rest = stem.substr(5);
    return rest.empty() || (rest.size() >= 2 && rest[0] == '-' &&
                            std::all_of(rest.begin() + 1, rest.end(),
                                        [](unsigned char c) { return std::isdigit(c); }));
  };
  std::error_code ec;
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::directory_iterator(plots_dir, ec))
    if (speed_plot(e.path().filename())) found.push_back(e.path());
  for (const auto& f : found) std::filesystem::remove(f, ec);
}

}  // namespace kvbench
