#include "harness/report/layer_kinds.h"

#include <filesystem>

#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/llama_config.h"

namespace kvbench {

std::vector<bool> local_layers_of(const nlohmann::json& config, const std::string& model_label) {
  std::string path;
  if (config.contains("models") && config["models"].is_array()) {
    for (const auto& m : config["models"])
      if (m.is_object() && m.value("label", std::string()) == model_label && m.contains("path") &&
          m["path"].is_string())
        path = m["path"].get<std::string>();
  } else if (config.contains("model") && config["model"].is_string()) {
    path = config["model"].get<std::string>();
  }
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return {};
  try {
    const LlamaConfig c = read_llama_config(*GgufFile::open(path));
    if (!c.has_local_layers()) return {};
    std::vector<bool> local(static_cast<size_t>(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l) local[static_cast<size_t>(l)] = c.is_local(l);
    return local;
  } catch (const InputError&) {
    return {};  // not a model kvbench reads: nothing marked
  }
}

}  // namespace kvbench
