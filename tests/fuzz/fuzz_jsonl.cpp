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
#include "model/error.h"

namespace {

// A file per process in /dev/shm (the reader takes a path, regular files only).
const std::string& scratch_path() {
  static const std::string path = "/dev/shm/fuzz_jsonl-" + std::to_string(::getpid()) + ".jsonl";
  return path;
}

void write(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  const std::string& path = scratch_path();
  write(path, std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto instances = read_jsonl(path);
    write(path, to_jsonl(instances));
    if (read_jsonl(path) != instances) std::abort();
  } catch (const InputError& e) {
    if (std::string(e.what()).rfind(path, 0) != 0) std::abort();  // every error names the file
  }
  return 0;
}
