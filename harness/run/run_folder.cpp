#include "harness/run/run_folder.h"

#include "harness/run/sessions.h"

#include "harness/run/packed_cells.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "datasets/json_text.h"
#include "harness/run/experiment.h"
#include "harness/run/machines.h"
#include "harness/run/packed_cells.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"
#include "model/common/printable.h"
#include "model/common/temporaries.h"

namespace fs = std::filesystem;

namespace kvbench {

nlohmann::json read_json_file(const std::string& path, size_t max_bytes) {
  return read_json_file_bounded(path, max_bytes);
}

std::string dump_json(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_file_text(const nlohmann::json& value) { return dump_json(value) + "\n"; }

void write_json_atomic(const std::string& path, const nlohmann::json& value) {
  write_file_atomic(path, json_file_text(value));
}

std::string utc_stamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  return stamp;
}

void check_run_folder_path(const std::string& path) {
  // A NUL would cut the path short for the system calls (a folder's name
  // would name an existing directory, and create_stamped_folder's loop
  // never end).
  if (path.find('\0') != std::string::npos)
    throw InputError(escaped_text(path, 512) +
                     ": a run folder path must not contain a NUL character");
  // gnuplot writes the plots there, and its strings have no escapes.
  if (!one_line_utf8(path))
    throw InputError(escaped_text(path, 512) +
                     ": a run folder path must not contain control characters or invalid "
                     "UTF-8 (its plots are written there by gnuplot)");
}

std::string create_stamped_folder(const std::string& output, const std::string& name) {
  const std::string stamp = utc_stamp();
  check_run_folder_path(output + "/" + name);
  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec) throw InputError(output + ": cannot create output directory (" + ec.message() + ")");
  std::string dir = output + "/" + name + "-" + stamp;
  // create_directory fails on an existing folder: never reuse one.
  for (int i = 2; !fs::create_directory(dir, ec); ++i) {
    if (ec) throw InputError(dir + ": cannot create run folder (" + ec.message() + ")");
    if (i > 1000) throw InputError(dir + ": cannot create run folder (1000 names taken)");
    dir = output + "/" + name + "-" + stamp + "-" + std::to_string(i);
  }
  return dir;
}

RunFolder RunFolder::create(const std::string& output, const std::string& name,
                            const nlohmann::json& config, const nlohmann::json& meta) {
  const std::string dir = create_stamped_folder(output, name);
  RunFolder f;
  f.dir_ = dir;
  f.config_ = config;
  try {
    f.lock();
    fs::create_directory(dir + "/cells");
    write_json_atomic(dir + "/config.json", config);
    write_json_atomic(dir + "/meta.json", meta);
  } catch (...) {
    f.remove();
    throw;
  }
  return f;
}

void RunFolder::lock() {
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw InputError(dir_ + ": cannot open the run folder (" + std::strerror(errno) + ")");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK)
      throw InputError(
          dir_ + ": another kvbench process is writing this run folder (wait for it to finish)");
    throw InputError(dir_ + ": cannot lock the run folder (" + std::strerror(err) + ")");
  }
  lock_fd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
}

namespace {

// What cells/ holds: the cell files (sorted), every entry checked with
// lstat. An entry that is not a regular file (a FIFO, a symbolic link, a
// directory, a device) is an InputError naming it: a cell skipped silently
// would change every figure computed from the rest. Temporaries of an
// interrupted write and files not named *.json are not cells.
std::vector<std::string> cell_files(const std::string& dir) {
  std::vector<std::string> files;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return files;
  if (!S_ISDIR(st.st_mode))
    throw InputError(dir + ": not a directory (a run folder's cells are files in it)");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string p = it->path().string();
    if (::lstat(p.c_str(), &st) != 0) continue;  // removed meanwhile
    if (!S_ISREG(st.st_mode))
      throw InputError(p + ": not a regular file (" +
                       (S_ISLNK(st.st_mode)    ? "a symbolic link"
                        : S_ISDIR(st.st_mode)  ? "a directory"
                        : S_ISFIFO(st.st_mode) ? "a FIFO"
                                               : "a special file") +
                       "): a run folder's cells/ holds cell files only");
    if (it->path().extension() == ".json") files.push_back(p);
  }
  if (ec) throw InputError(dir + ": cannot list (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  return files;
}

// Temporaries an interrupted writer left (only called with the lock held:
// no live writer owns them).
void remove_temporaries(const std::string& dir) {
  std::error_code ec;
  for (const char* sub : {"", "/cells", "/prefills", "/plots"}) {
    if (!fs::is_directory(dir + sub, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir + sub, ec))
      if (e.is_regular_file(ec) && is_temporary_name(e.path().filename().string()))
        fs::remove(e.path(), ec);
  }
}

bool safe_cell_id(const std::string& id) {
  if (id.empty() || id.size() > 240 || id[0] == '.') return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
          c == '~'))
      return false;
  return true;
}

}  // namespace

RunFolder RunFolder::open(const std::string& dir, Access access) {
  if (dir.size() > 4000) throw InputError(dir.substr(0, 60) + "...: path too long");
  if (access == Access::Write) check_run_folder_path(dir);
  if (!fs::is_directory(dir)) throw InputError(dir + ": not a run folder (no such directory)");
  RunFolder f;
  f.dir_ = dir;
  if (access == Access::Write) {
    f.lock();
    // What kvbench writes into must be real directories of this folder: a
    // symbolic link there would send cells, prefills or plots elsewhere.
    for (const char* sub : {"cells", "prefills", "plots"}) {
      struct stat st {};
      if (::lstat((dir + "/" + sub).c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        throw InputError(dir + "/" + sub +
                         ": not a directory (a symbolic link or a file; kvbench writes there)");
    }
    // A cell or kept prefill that is not a regular file would be skipped
    // (or, for resume, taken as done): refused up front.
    cell_files(dir + "/cells");
    // gnuplot opens plot files itself (following links): refused up front,
    // before report writes anything.
    std::error_code ec;
    if (fs::is_directory(dir + "/plots", ec))
      for (const auto& e : fs::directory_iterator(dir + "/plots", ec))
        if (e.is_symlink(ec) || !e.is_regular_file(ec))
          throw InputError(e.path().string() +
                           ": exists and is not a regular file (kvbench writes plots there)");
    remove_temporaries(dir);
  }
  if (!fs::exists(dir + "/config.json"))
    throw InputError(
        dir +
        ": not a run folder (no config.json: a run interrupted while its folder was being "
        "created has nothing to resume; start it again)");
  f.config_ = read_json_file(dir + "/config.json");
  // What report and merge read of it (--resume validates it whole).
  const auto bad = [&](const std::string& field, const char* what) {
    throw InputError(dir + "/config.json: " + field + ": expected " + what);
  };
  if (!f.config_.is_object()) bad("/", "an object");
  for (const char* k : {"name", "description", "model", "output"})
    if (f.config_.contains(k) && !f.config_[k].is_string()) bad(std::string("/") + k, "a string");
  if (f.config_.contains("threads") && !f.config_["threads"].is_number_integer())
    bad("/threads", "an integer");
  if (f.config_.contains("models")) {
    const nlohmann::json& list = f.config_["models"];
    if (!list.is_array() || list.empty() || list.size() > kMaxModels)
      bad("/models", "an array of 1 to 16 models");
    for (size_t i = 0; i < list.size(); ++i)
      if (!list[i].is_object() || !list[i].contains("label") || !list[i]["label"].is_string())
        bad("/models/" + std::to_string(i), "an object with a string \"label\"");
  }
  return f;
}

nlohmann::json RunFolder::meta() const {
  if (!fs::exists(path("meta.json"))) return nlohmann::json::object();
  const std::string file = path("meta.json");
  nlohmann::json m = read_json_file(file);
  const auto bad = [&](const std::string& field, const char* what) {
    throw InputError(file + ": " + field + ": expected " + what);
  };
  if (!m.is_object()) bad("/", "an object");
  for (const char* k : {"model_sha256", "cpu", "git_commit"})
    if (m.contains(k) && !m[k].is_string()) bad(std::string("/") + k, "a string");
  if (m.contains("git_dirty") && !m["git_dirty"].is_boolean()) bad("/git_dirty", "true or false");
  // Runs of several models: [{path, label, sha256}] (collect_run_meta).
  if (m.contains("models")) {
    const nlohmann::json& list = m["models"];
    if (!list.is_array() || list.empty() || list.size() > kMaxModels)
      bad("/models", "an array of 1 to 16 models");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = "/models/" + std::to_string(i);
      if (!list[i].is_object()) bad(at, "an object");
      for (const char* k : {"path", "label", "sha256"})
        if (!list[i].contains(k) || !list[i][k].is_string()) bad(at + "/" + k, "a string");
      // A merge of runs made apart (kvbench merge) keeps each model's machine and build.
      for (const char* k : {"cpu", "git_commit"})
        if (list[i].contains(k) && !list[i][k].is_string()) bad(at + "/" + k, "a string");
      if (list[i].contains("git_dirty") && !list[i]["git_dirty"].is_boolean())
        bad(at + "/git_dirty", "true or false");
      if (list[i].contains("machines")) check_machines(list[i]["machines"], file, at + "/machines");
    }
  }
  // A merge of shards run on several machines or builds keeps each one's.
  if (m.contains("machines")) check_machines(m["machines"], file, "/machines");
  // Timings marked as no measurements (kvbench report --withhold-speed): the reason.
  if (m.contains("speed_withheld") &&
      (!m["speed_withheld"].is_string() || m["speed_withheld"].get<std::string>().empty() ||
       m["speed_withheld"].get<std::string>().size() > kMaxSpeedWithheldBytes))
    bad("/speed_withheld", "a reason of 1 to 1000 bytes");
  check_sessions(m, file);
  if (m.contains("inputs")) {
    const nlohmann::json& in = m["inputs"];
    if (!in.is_object() || !in.contains("config.json") || !in["config.json"].is_string())
      bad("/inputs", "an object with a string \"config.json\"");
    if (in.contains("jsonl")) {
      if (!in["jsonl"].is_object() || in["jsonl"].size() > 10000)
        bad("/inputs/jsonl", "an object of at most 10000 files");
      for (const auto& [path, sha] : in["jsonl"].items())
        if (!sha.is_string()) bad("/inputs/jsonl", "file names with their sha256 as a string");
    }
  }
  if (m.contains("invocation")) {
    const nlohmann::json& inv = m["invocation"];
    if (!inv.is_object() || !inv.contains("experiment") || !inv["experiment"].is_string())
      bad("/invocation", "an object with a string \"experiment\"");
    if (inv.contains("overrides")) {
      const nlohmann::json& o = inv["overrides"];
      if (!o.is_array() || o.size() > 1000) bad("/invocation/overrides", "at most 1000 strings");
      for (const auto& v : o)
        if (!v.is_string()) bad("/invocation/overrides", "strings");
    }
  }
  for (const char* k : {"plan", "work", "shard"}) {
    if (!m.contains(k)) continue;
    if (!m[k].is_object()) bad(std::string("/") + k, "an object");
    for (const auto& [name, v] : m[k].items())
      if (!v.is_number_integer()) bad(std::string("/") + k + "/" + name, "an integer");
  }
  return m;
}

// More layers than any model kvbench loads has (a bound for the per-layer
// arrays a cell holds).
constexpr size_t kMaxLayers = 4096;

void check_cell(const nlohmann::json& c, const std::string& path, const std::string& expected_id) {
  const auto fail = [&](const std::string& field, const std::string& what) {
    throw InputError(path + ": " + field + ": " + what);
  };
  const auto need = [&](const nlohmann::json& obj, const std::string& where, const char* key,
                        auto is_type, const char* type, bool required) {
    if (!obj.contains(key)) {
      if (required) fail(where + "/" + key, "missing");
      return;
    }
    if (!is_type(obj[key])) fail(where + "/" + key, std::string("expected ") + type);
  };
  const auto is_string = [](const nlohmann::json& j) { return j.is_string(); };
  const auto is_object = [](const nlohmann::json& j) { return j.is_object(); };
  const auto is_number = [](const nlohmann::json& j) { return j.is_number(); };
  const auto is_integer = [](const nlohmann::json& j) { return j.is_number_integer(); };
  const auto is_bool = [](const nlohmann::json& j) { return j.is_boolean(); };
  const auto is_array = [](const nlohmann::json& j) { return j.is_array(); };
  const auto number_or_null = [](const nlohmann::json& j) { return j.is_number() || j.is_null(); };
  if (!c.is_object()) fail("/", "expected an object");
  need(c, "", "id", is_string, "a string", true);
  const std::string id = c["id"].get<std::string>();
  if (id != expected_id)
    fail("/id", "'" + id.substr(0, 80) + "' is not the file's name (a cell is named after its id)");
  if (!safe_cell_id(id)) fail("/id", "not a safe file name");
  need(c, "", "instance", is_object, "an object", true);
  need(c, "", "policy", is_object, "an object", true);
  need(c, "", "score", is_number, "a number", true);
  // Every grader and the perplexity ratio score in [0, 1]; the intervals and
  // tests of report and compare assume it.
  if (const double s = c["score"].get<double>(); !(s >= 0.0 && s <= 1.0))
    fail("/score", "out of [0, 1]");
  // The model (kvbench records it since runs take several; older cells have
  // none and belong to the run's one model).
  need(c, "", "model", is_object, "an object", false);
  if (c.contains("model")) {
    need(c["model"], "/model", "label", is_string, "a string", true);
    need(c["model"], "/model", "file", is_string, "a string", false);
    need(c["model"], "/model", "sha256", is_string, "a string", false);
  }
  need(c, "", "prediction", is_string, "a string", false);
  need(c, "", "answers", is_array, "an array", false);
  const nlohmann::json& inst = c["instance"];
  need(inst, "/instance", "id", is_string, "a string", true);
  need(inst, "/instance", "task", is_string, "a string", true);
  need(inst, "/instance", "length", is_integer, "an integer", false);
  need(inst, "/instance", "depth", number_or_null, "a number or null", false);
  const nlohmann::json& p = c["policy"];
  need(p, "/policy", "label", is_string, "a string", true);
  need(p, "/policy", "index", is_integer, "an integer", false);
  if (p.contains("index") && (p["index"].get<int64_t>() < 0 || p["index"].get<int64_t>() > 1000000))
    fail("/policy/index", "out of range");
  need(p, "/policy", "is_reference", is_bool, "true or false", false);
  need(p, "/policy", "spec", is_string, "a string", false);
  need(p, "/policy", "base", is_string, "a string", false);
  need(p, "/policy", "budget", number_or_null, "a number or null", false);
  // Needle survival per layer (the report's per-layer figure): shares in
  // [0, 1], at most kMaxLayers of them.
  const auto per_layer = [&](const nlohmann::json& obj, const std::string& where) {
    need(obj, where, "per_layer", is_array, "an array", false);
    if (!obj.contains("per_layer")) return;
    const nlohmann::json& v = obj["per_layer"];
    if (v.size() > kMaxLayers) fail(where + "/per_layer", "more than 4096 layers");
    for (const auto& x : v)
      if (!x.is_null() && !(x.is_number() && x.get<double>() >= 0 && x.get<double>() <= 1))
        fail(where + "/per_layer", "expected shares in [0, 1]");
  };
  if (c.contains("needle_survival") && !c["needle_survival"].is_null()) {
    const nlohmann::json& ns = c["needle_survival"];
    if (!ns.is_object()) fail("/needle_survival", "expected an object or null");
    per_layer(ns, "/needle_survival");
    if (ns.contains("attended") && !ns["attended"].is_null()) {
      if (!ns["attended"].is_object())
        fail("/needle_survival/attended", "expected an object or null");
      per_layer(ns["attended"], "/needle_survival/attended");
    }
  }
}

bool RunFolder::has_cell(const std::string& id) const {
  // A regular file only (open(Write) refused anything else up front).
  struct stat st {};
  return ::lstat((dir_ + "/cells/" + id + ".json").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void RunFolder::write_cell(const std::string& id, const nlohmann::json& cell) const {
  // Never a path outside cells/: ids come from the plan (file_name_safe),
  // and merge takes them from checked cells.
  if (!safe_cell_id(id))
    throw InputError(dir_ + "/cells: the cell id '" + id.substr(0, 80) +
                     "' is not a safe file name");
  // Made by the first cell written (a refused command writes nothing).
  std::error_code ec;
  fs::create_directory(dir_ + "/cells", ec);
  // cells/ holds thousands: its temporaries are swept under the lock.
  write_file_atomic(dir_ + "/cells/" + id + ".json", dump_json(cell, 1) + "\n", Sweep::None);
}

namespace {

// A label names one configuration of a model (its row, its heatmap panel,
// its history series), and a configuration has one label: two cells that
// disagree (a label given twice, a spec or index changed by hand) are an
// InputError naming the second one's file.
void check_labels(const std::vector<nlohmann::json>& cells, const std::vector<std::string>& files) {
  struct Seen {
    std::string file;
    std::optional<int64_t> index;
    std::optional<std::string> spec;
  };
  std::map<std::pair<std::string, std::string>, Seen> by_label;     // (model, label)
  std::map<std::pair<std::string, int64_t>, std::string> by_index;  // (model, index) -> label
  for (size_t i = 0; i < cells.size(); ++i) {
    const nlohmann::json& c = cells[i];
    const nlohmann::json& p = c["policy"];
    const std::string model = c.contains("model") ? c["model"]["label"].get<std::string>() : "";
    const std::string label = p["label"].get<std::string>();
    Seen now{files[i], std::nullopt, std::nullopt};
    if (p.contains("index")) now.index = p["index"].get<int64_t>();
    if (p.contains("spec")) now.spec = p["spec"].get<std::string>();
    const auto [it, fresh] = by_label.emplace(std::make_pair(model, label), now);
    const Seen& was = it->second;
    const auto fail = [&](const std::string& field, const std::string& what) {
      throw InputError(files[i] + ": " + field + ": " + what + " (cell " +
                       fs::path(was.file).filename().string() +
                       "): every configuration needs a label of its own");
    };
    if (!fresh && now.spec && was.spec && *now.spec != *was.spec)
      fail("/policy/label", "'" + escaped_text(label, 200) + "' is the label of the spec '" +
                                escaped_text(*was.spec, 200) + "' too");
    if (!fresh && now.index && was.index && *now.index != *was.index)
      fail("/policy/label", "'" + escaped_text(label, 200) + "' is the label of configuration " +
                                std::to_string(*was.index) + " too");
    if (now.index) {
      const auto [at, first] = by_index.emplace(std::make_pair(model, *now.index), label);
      if (!first && at->second != label)
        throw InputError(files[i] + ": /policy/label: configuration " + std::to_string(*now.index) +
                         " is labelled '" + escaped_text(at->second, 200) + "' in another cell");
    }
  }
}

}  // namespace

bool RunFolder::packed() const {
  struct stat st {};
  return ::lstat(path(kPackedCells).c_str(), &st) == 0;
}

std::vector<nlohmann::json> RunFolder::cells() const {
  if (packed()) {
    struct stat st {};
    if (::lstat(path("cells").c_str(), &st) == 0)
      throw InputError(dir_ + ": holds both cells/ and " + kPackedCells +
                       ": which are its cells is unclear (remove one)");
    const std::string file = path(kPackedCells);
    // As for cell files: a link could make a shared folder read any file.
    if (::lstat(file.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      throw InputError(file + ": a symbolic link (a run folder's cells are its own files)");
    std::vector<nlohmann::json> out = read_packed_cells(file);
    std::vector<std::string> names;
    names.reserve(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      names.push_back(file + ": line " + std::to_string(i + 2));  // after the header
      const nlohmann::json* id =
          out[i].is_object() && out[i].contains("id") ? &out[i]["id"] : nullptr;
      check_cell(out[i], names.back(), id && id->is_string() ? id->get<std::string>() : "");
      // Sorted by id and each once, as cells/ lists them.
      if (i > 0 && !(out[i - 1]["id"].get<std::string>() < out[i]["id"].get<std::string>()))
        throw InputError(names.back() +
                         ": /id: not after the previous line's (cells are sorted by "
                         "id, each once)");
    }
    check_labels(out, names);
    return out;
  }
  const std::vector<std::string> files = cell_files(dir_ + "/cells");
  std::vector<nlohmann::json> out;
  out.reserve(files.size());
  for (const auto& p : files) {
    out.push_back(read_json_file(p, kMaxCellBytes));
    check_cell(out.back(), p, fs::path(p).stem().string());
  }
  check_labels(out, files);
  return out;
}

void RunFolder::remove() const {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace kvbench
