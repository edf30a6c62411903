#include "harness/run/run_meta.h"

#include <cblas.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <boost/version.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>
#include <vector>

#include "harness/sha256.h"
#include "kvbench_build_info.h"  // generated: KVBENCH_GIT_COMMIT, KVBENCH_GIT_DIRTY
#include "model/common/error.h"

namespace kvbench {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      return p == std::string::npos ? line : line.substr(p + 2);
    }
  return "unknown";
}

nlohmann::json collect_run_meta(const std::vector<ModelEntry>& models, int threads) {
  char pcre_version[64] = {0};
  pcre2_config_8(PCRE2_CONFIG_VERSION, pcre_version);
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  nlohmann::json meta = {{"kvbench_version", KVBENCH_VERSION},
                         // The commit the binary was built from (not the
                         // checkout's HEAD when it runs).
                         {"git_commit", KVBENCH_GIT_COMMIT},
                         {"cpu", cpu_model_name()},
                         {"cores", std::thread::hardware_concurrency()},
                         {"threads", threads},
                         {"compiler", __VERSION__},
                         {"libraries",
                          {{"openblas", openblas_get_config()},
                           {"boost", BOOST_LIB_VERSION},
                           {"nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                                 std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                                 std::to_string(NLOHMANN_JSON_VERSION_PATCH)},
                           {"pcre2", pcre_version}}},
                         {"started_utc", stamp}};
  // Built with tracked files changed from that commit: the commit alone does
  // not say which code produced the numbers.
  if (KVBENCH_GIT_DIRTY) meta["git_dirty"] = true;
  if (models.size() == 1) {
    meta["model"] = models[0].path;
    meta["model_sha256"] = sha256_file(models[0].path);
  } else {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& m : models)
      list.push_back({{"path", m.path}, {"label", m.label}, {"sha256", sha256_file(m.path)}});
    meta["models"] = list;
  }
  return meta;
}

std::string model_sha256(const nlohmann::json& meta, size_t index) {
  if (meta.contains("models")) {
    const auto& list = meta["models"];
    return index < list.size() ? list[index].value("sha256", std::string()) : std::string();
  }
  return index == 0 ? meta.value("model_sha256", std::string()) : std::string();
}

void check_same_models(const nlohmann::json& old_meta, const nlohmann::json& meta,
                       const std::string& meta_file) {
  const size_t n = meta.contains("models") ? meta["models"].size() : 1;
  const size_t old_n = old_meta.contains("models") ? old_meta["models"].size() : 1;
  if (n != old_n)
    throw InputError(meta_file + ": the run started with " + std::to_string(old_n) +
                     " model(s), the config now has " + std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const std::string was = model_sha256(old_meta, i), now = model_sha256(meta, i);
    if (was.empty() || was == now) continue;  // an old folder without a recorded hash
    const std::string path = meta.contains("models") ? meta["models"][i]["path"].get<std::string>()
                                                     : meta["model"].get<std::string>();
    throw InputError(path + ": its sha256 differs from the one this run started with (" +
                     was.substr(0, 16) + "...): resume with the same model");
  }
}

nlohmann::json input_hashes(const ExperimentConfig& config, const std::string& config_json_text) {
  nlohmann::json jsonl = nlohmann::json::object();
  for (const auto& t : config.tasks)
    if (!t.jsonl.empty()) jsonl[t.jsonl] = sha256_file(t.jsonl);
  return {{"config.json", sha256_hex(config_json_text.data(), config_json_text.size())},
          {"jsonl", jsonl}};
}

void check_same_inputs(const nlohmann::json& old_meta, const nlohmann::json& inputs,
                       const std::string& run_dir) {
  if (!old_meta.contains("inputs")) return;  // a folder from before inputs were recorded
  const nlohmann::json& was = old_meta["inputs"];
  const auto changed = [&](const std::string& file, const std::string& what) {
    throw InputError(file + ": " + what +
                     " since this run started (resuming would pair other inputs with the "
                     "finished cells): restore it, or start a new run");
  };
  if (was.value("config.json", "") != inputs["config.json"].get<std::string>())
    changed(run_dir + "/config.json", "changed");
  const nlohmann::json old_jsonl = was.value("jsonl", nlohmann::json::object());
  for (const auto& [path, sha] : inputs["jsonl"].items()) {
    if (!old_jsonl.contains(path)) changed(path, "was not an instance file of this run");
    if (old_jsonl[path] != sha) changed(path, "changed");
  }
  for (const auto& [path, sha] : old_jsonl.items())
    if (!inputs["jsonl"].contains(path)) changed(path, "is no longer read by the config");
}

}  // namespace kvbench
