// libFuzzer target for JSONL instance files (kvbench dataset show, "jsonl"
// tasks). Any input must be refused with InputError naming the file and line
// or give instances that write back (to_jsonl) and read again to the same
// instances.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "datasets/jsonl.h"
#include "model/common/error.h"
#include "tests/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  static const std::string path = fuzz::scratch_path("fuzz_jsonl", ".jsonl");
  fuzz::write_file(path, fuzz::input_text(data, size));
  try {
    const auto instances = read_jsonl(path);
    fuzz::write_file(path, to_jsonl(instances));
    if (read_jsonl(path) != instances) std::abort();
  } catch (const InputError& e) {
    fuzz::expect_names_file(e.what(), path);
  }
  return 0;
}
