#include "datasets/jsonl.h"

#include <sstream>

#include "datasets/json_text.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/input_file.h"

namespace kvbench {

std::string to_jsonl(const std::vector<Instance>& instances) {
  std::string out;
  for (const Instance& in : instances) {
    out +=
        to_json(in).dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
    out += '\n';
  }
  return out;
}

void write_jsonl(const std::string& path, const std::vector<Instance>& instances) {
  write_file_atomic(path, to_jsonl(instances));
}

std::vector<Instance> read_jsonl(const std::string& path) {
  std::istringstream in(read_regular_file(path, kMaxJsonlBytes, "a JSONL file"));
  std::vector<Instance> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    const nlohmann::json j =
        parse_json_text(line, path + ":" + std::to_string(n) + ": malformed JSON");
    try {
      out.push_back(instance_from_json(j));
    } catch (const InputError& e) {
      throw InputError(where + e.what());
    }
  }
  return out;
}

}  // namespace kvbench
