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

namespace {

std::string git_commit() {
  // The source tree this binary was built from.
  const std::string cmd =
      std::string("git -C '") + KVBENCH_SOURCE_DIR + "' rev-parse HEAD 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "unknown";
  char buf[128] = {0};
  const bool ok = fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  std::string s = ok ? buf : "unknown";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

}  // namespace

nlohmann::json collect_run_meta(const std::string& model_path, int threads) {
  char pcre_version[64] = {0};
  pcre2_config_8(PCRE2_CONFIG_VERSION, pcre_version);
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return {{"kvbench_version", KVBENCH_VERSION},
          {"git_commit", git_commit()},
          {"model", model_path},
          {"model_sha256", sha256_file(model_path)},
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
}

}  // namespace kvbench
