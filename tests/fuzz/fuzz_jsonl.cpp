// libFuzzer target for JSONL instance files (kvbench dataset show, "jsonl"
// tasks). Any input must be refused with InputError naming the file and line
// or give instances that write back (to_jsonl) and read again to the same
// instances.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "datasets/jsonl.h"
#include "model/common/error.h"
#include "tests/fuzz/fuzz_files.h"

namespace {

// A file per process in /dev/shm (the reader takes a path, regular files only).
const std::string& scratch_path() {
  static const std::string path = "/dev/shm/fuzz_jsonl-" + std::to_string(::getpid()) + ".jsonl";
  return path;
}

using kvbench::fuzz::write_file;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  const std::string& path = scratch_path();
  write_file(path, std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto instances = read_jsonl(path);
    write_file(path, to_jsonl(instances));
    if (read_jsonl(path) != instances) std::abort();
  } catch (const InputError& e) {
    if (std::string(e.what()).rfind(path, 0) != 0) std::abort();  // every error names the file
  }
  return 0;
}
