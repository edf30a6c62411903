#include "harness/report/models.h"

#include <algorithm>
#include <map>

#include "harness/run/experiment.h"

namespace kvbench {

std::string cell_model_label(const nlohmann::json& cell, const std::string& fallback) {
  if (cell.contains("model") && cell["model"].is_object() && cell["model"].contains("label") &&
      cell["model"]["label"].is_string())
    return cell["model"]["label"].get<std::string>();
  return fallback;
}

std::string default_model_label(const nlohmann::json& config) {
  if (config.contains("model") && config["model"].is_string())
    return model_label_of_path(config["model"].get<std::string>());
  return "";
}

std::vector<ModelSection> split_by_model(const std::vector<nlohmann::json>& cells,
                                         const nlohmann::json& config) {
  std::vector<ModelSection> out;
  std::map<std::string, size_t> index;
  const auto section = [&](const std::string& label) -> ModelSection& {
    const auto [it, fresh] = index.emplace(label, out.size());
    if (fresh) out.push_back({label, {}});
    return out[it->second];
  };
  // RunFolder::open checked the list's shape.
  if (config.contains("models") && config["models"].is_array())
    for (const auto& m : config["models"])
      if (m.is_object() && m.contains("label") && m["label"].is_string())
        section(m["label"].get<std::string>());
  const std::string fallback = default_model_label(config);
  for (const auto& c : cells) section(cell_model_label(c, fallback)).cells.push_back(c);
  // A listed model without cells yet (a run in progress) has no section.
  out.erase(
      std::remove_if(out.begin(), out.end(), [](const ModelSection& s) { return s.cells.empty(); }),
      out.end());
  if (out.empty()) out.push_back({fallback, {}});
  return out;
}

}  // namespace kvbench
