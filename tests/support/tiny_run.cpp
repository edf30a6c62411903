#include "tests/support/tiny_run.h"

#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/cli_run.h"
#include "tests/support/reference_llama.h"
#include "tests/support/run_output.h"

namespace kvbench::test {

std::string tiny_passkey_run(const std::string& dir, const std::string& out, int shard) {
  const std::string path = dir + "/tiny.json";
  std::ofstream(path) << R"({"name": "tiny", "model": ")" << tiny_model_path()
                      << R"(", "threads": 2, "seed": 3,
    "tasks": [{"task": "passkey", "lengths": [200], "depths": [0.25, 0.75]}],
    "policies": ["full", {"spec": "window", "budgets": [64]}],
    "decoding": {"chunk": 64, "max_new_tokens": 4}})";
  const auto r = run_kvbench("run " + path + " -q --out " + dir + "/" + out +
                             (shard ? " --shard " + std::to_string(shard) + "/2" : ""));
  EXPECT_EQ(r.code, 0) << r.err;
  return only_run_folder(dir + "/" + out);
}

}  // namespace kvbench::test
