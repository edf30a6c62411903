#include "datasets/jsonl.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "model/error.h"

namespace kvbench {

std::string to_jsonl(const std::vector<Instance>& instances) {
  std::string out;
  for (const Instance& in : instances) {
    out += to_json(in).dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
    out += '\n';
  }
  return out;
}

void write_jsonl(const std::string& path, const std::vector<Instance>& instances) {
  const std::string text = to_jsonl(instances);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write (cannot create " + tmp + ")");
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError(path + ": write error");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path + ": cannot write (rename failed)");
  }
}

std::vector<Instance> read_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open file");
  std::vector<Instance> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      std::string what = e.what();
      // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> from "column".
      const size_t at = what.find("column");
      throw InputError(where + "malformed JSON (" + (at == std::string::npos ? what : what.substr(at)) + ")");
    }
    try {
      out.push_back(instance_from_json(j));
    } catch (const InputError& e) {
      throw InputError(where + e.what());
    }
  }
  if (in.bad()) throw InputError(path + ": read error");
  return out;
}

}  // namespace kvbench
