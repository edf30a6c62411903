#include "harness/run_folder.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "harness/atomic_file.h"
#include "model/error.h"

namespace fs = std::filesystem;

namespace kvbench {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const auto p = what.find("parse error");
    throw InputError(path + ": " + (p == std::string::npos ? what : what.substr(p)));
  }
}

std::string dump_json(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_json_atomic(const std::string& path, const nlohmann::json& value) {
  write_file_atomic(path, dump_json(value) + "\n");
}

RunFolder RunFolder::create(const std::string& output, const std::string& name,
                            const nlohmann::json& config, const nlohmann::json& meta) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec) throw InputError(output + ": cannot create output directory (" + ec.message() + ")");
  std::string dir = output + "/" + name + "-" + stamp;
  // create_directory fails on an existing folder: never reuse one.
  for (int i = 2; !fs::create_directory(dir, ec); ++i) {
    if (ec) throw InputError(dir + ": cannot create run folder (" + ec.message() + ")");
    dir = output + "/" + name + "-" + stamp + "-" + std::to_string(i);
  }
  RunFolder f;
  f.dir_ = dir;
  f.config_ = config;
  try {
    fs::create_directory(dir + "/cells");
    write_json_atomic(dir + "/config.json", config);
    write_json_atomic(dir + "/meta.json", meta);
  } catch (...) {
    f.remove();
    throw;
  }
  return f;
}

RunFolder RunFolder::open(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir + ": not a run folder (no such directory)");
  RunFolder f;
  f.dir_ = dir;
  f.config_ = read_json_file(dir + "/config.json");
  std::error_code ec;
  fs::create_directories(dir + "/cells", ec);
  return f;
}

nlohmann::json RunFolder::meta() const {
  return fs::exists(path("meta.json")) ? read_json_file(path("meta.json")) : nlohmann::json::object();
}

bool RunFolder::has_cell(const std::string& id) const { return fs::exists(dir_ + "/cells/" + id + ".json"); }

void RunFolder::write_cell(const std::string& id, const nlohmann::json& cell) const {
  write_file_atomic(dir_ + "/cells/" + id + ".json", dump_json(cell, 1) + "\n");
}

std::vector<nlohmann::json> RunFolder::cells() const {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_ + "/cells")) {
    const std::string p = e.path().string();
    // Leftover temporaries of an interrupted write are not cells.
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  std::vector<nlohmann::json> out;
  out.reserve(files.size());
  for (const auto& p : files) out.push_back(read_json_file(p));
  return out;
}

void RunFolder::remove() const {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace kvbench
