#include "harness/history/add.h"

#include <algorithm>
#include <cctype>
#include <ctime>

#include <nlohmann/json.hpp>

#include "harness/report/arithmetic.h"
#include "harness/report/models.h"
#include "harness/run/run_folder.h"
#include "harness/sha256.h"
#include "harness/subprocess.h"
#include "harness/time_text.h"
#include "model/common/error.h"
#include "model/common/printable.h"

namespace kvbench::history {
namespace {

using json = nlohmann::json;

// Longest text kept from a run folder per field (labels, ids, commits).
constexpr size_t kMaxFieldBytes = 4096;

std::string field(const json& obj, const char* key, const std::string& file, bool required = true) {
  if (!obj.contains(key)) {
    if (!required) return "";
    throw InputError(file + ": /" + key + ": missing (kvbench history needs it)");
  }
  if (!obj[key].is_string()) throw InputError(file + ": /" + key + ": expected a string");
  const std::string s = obj[key].get<std::string>();
  if (s.size() > kMaxFieldBytes)
    throw InputError(file + ": /" + key + ": longer than " + std::to_string(kMaxFieldBytes) +
                     " bytes");
  return s;
}

bool is_hex_commit(const std::string& s) {
  if (s.size() < 7 || s.size() > 64) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// The commit's date from git, unix seconds; nullopt when git cannot say (no
// repository, an unknown commit). A date git does print but that lies
// outside 1970 to 9999 (a forged committer time) is an error naming the field:
// stored, it would reach gmtime and the plot's date labels.
std::optional<int64_t> commit_time(const std::string& repo, const std::string& commit) {
  if (repo.empty() || !is_hex_commit(commit)) return std::nullopt;  // never an option to git
  const Captured git =
      run_capture({"git", "-C", repo, "show", "-s", "--format=%ct", commit + "^{commit}"}, "", 64);
  if (git.code != 0) return std::nullopt;
  std::string out = git.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const std::optional<int64_t> t = parse_unix_seconds(out);
  if (!t)
    throw InputError(escaped_text(repo, 512) + ": commit " + commit +
                     ": commit_time: git gives the committer time '" + escaped_text(out, 64) +
                     "', not unix seconds from 1970 to 9999 (a forged commit date?)");
  return t;
}

std::string machine_key(const json& meta, const std::string& file) {
  std::string cpu = field(meta, "cpu", file, false);
  // A merge of shards from several machines: all of their CPUs, in order.
  if (cpu.empty() && meta.contains("machines") && meta["machines"].is_array())
    for (const json& m : meta["machines"]) {
      const std::string one = m.is_object() ? m.value("cpu", std::string()) : std::string();
      if (!one.empty() && (" + " + cpu + " + ").find(" + " + one + " + ") == std::string::npos)
        cpu += (cpu.empty() ? "" : " + ") + one;
    }
  if (cpu.empty()) cpu = "unknown CPU";
  if (!meta.contains("cores")) return cpu;
  if (!meta["cores"].is_number_integer() || meta["cores"].get<int64_t>() < 1 ||
      meta["cores"].get<int64_t>() > 1'000'000)
    throw InputError(file + ": /cores: expected an integer from 1 to 1000000");
  const int64_t cores = meta["cores"].get<int64_t>();
  return cpu + ", " + std::to_string(cores) + (cores == 1 ? " core" : " cores");
}

std::string config_hash(json config) {
  config.erase("model");
  config.erase("models");
  config.erase("output");
  const std::string text = dump_json(config, -1);  // keys sorted: canonical
  return sha256_hex(text.data(), text.size());
}

// The run's decoding.protocol as config.json holds it (written only when
// not the default, harness/run/experiment.cpp): "query_aware" or
// "query_agnostic". Anything else is an error naming the field: a series
// would be keyed by it.
std::string protocol_of(const json& config, const std::string& file) {
  if (!config.contains("decoding") || !config["decoding"].is_object() ||
      !config["decoding"].contains("protocol"))
    return "query_aware";
  const json& p = config["decoding"]["protocol"];
  if (p != "query_aware" && p != "query_agnostic")
    throw InputError(file + ": /decoding/protocol: expected \"query_aware\" or \"query_agnostic\"");
  return p.get<std::string>();
}

std::string now_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return stamp;
}

}  // namespace

AddResult add_run(const Db& db, const std::string& run_dir, const std::string& repo) {
  const RunFolder run = RunFolder::open(run_dir);
  const std::string meta_file = run.path("meta.json");
  const json meta = run.meta();
  if (meta.empty())
    throw InputError(meta_file + ": missing (kvbench history needs the run's meta)");
  AddResult r;
  r.git_commit = field(meta, "git_commit", meta_file);
  // RunFolder::meta() checked it is a boolean when present.
  r.git_dirty = meta.value("git_dirty", false);
  const std::string started = field(meta, "started_utc", meta_file);
  if (!parse_utc(started))
    throw InputError(meta_file + ": /started_utc: expected YYYY-MM-DDTHH:MM:SSZ");
  // The models: one, or the list of a run of several (RunFolder::meta()
  // checked its shape); each becomes its own history run.
  struct ModelRun {
    std::string sha256, label, run_id;  // label: "" for a run of one model
  };
  std::vector<ModelRun> models;
  if (meta.contains("models")) {
    for (size_t i = 0; i < meta["models"].size(); ++i) {
      const std::string at = meta_file + ": /models/" + std::to_string(i);
      models.push_back(
          {field(meta["models"][i], "sha256", at), field(meta["models"][i], "label", at), ""});
    }
  } else {
    models.push_back({field(meta, "model_sha256", meta_file), "", ""});
  }
  const bool several = meta.contains("models");
  const std::string machine = machine_key(meta, meta_file);
  const std::string chash = config_hash(run.config());
  // The config hash covers it too, but series are not keyed by the hash
  // (any edit of the experiment would start new ones): by the protocol.
  const std::string protocol = protocol_of(run.config(), run.path("config.json"));
  std::string experiment = run.config().contains("name") && run.config()["name"].is_string()
                               ? run.config()["name"].get<std::string>().substr(0, kMaxFieldBytes)
                               : std::string("experiment");
  // A run of another arithmetic than the default (exact activations, bf16
  // attention) is a series of its own: its scores move by the arithmetic,
  // which is no change of the code. Default runs keep the bare name.
  const std::string arithmetic = arithmetic_text(run.config());
  if (arithmetic != arithmetic_text(json::object())) experiment += " [" + arithmetic + "]";
  for (ModelRun& m : models) {
    json identity = {{"git_commit", r.git_commit}, {"started_utc", started},
                     {"model_sha256", m.sha256},   {"config_hash", chash},
                     {"machine", machine},         {"shard", meta.value("shard", json())}};
    // Unchanged for a run of one model, so its run_id is what it always was.
    if (several) identity["model_label"] = m.label;
    if (r.git_dirty) identity["git_dirty"] = true;  // a clean run's id stays as it was
    const std::string identity_text = dump_json(identity, -1);
    m.run_id = sha256_hex(identity_text.data(), identity_text.size());
  }
  r.run_id = models.front().run_id;
  r.runs = static_cast<int64_t>(models.size());
  // Read (and check) every cell before the transaction: nothing is written
  // for a folder with a damaged cell.
  const std::vector<json> cells = run.cells();
  std::vector<size_t> cell_model(cells.size(), 0);  // index into models
  if (several) {
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string label = cell_model_label(cells[i], "");
      const auto it = std::find_if(models.begin(), models.end(),
                                   [&](const ModelRun& m) { return m.label == label; });
      if (it == models.end())
        throw InputError(run.path("cells/" + cells[i]["id"].get<std::string>() + ".json") +
                         ": /model/label: '" + escaped_text(label, 200) +
                         "' is not one of the run's models (meta.json /models)");
      cell_model[i] = static_cast<size_t>(it - models.begin());
    }
  }
  const std::optional<int64_t> when = commit_time(repo, r.git_commit);

  // "Already present" is decided by the key, explicitly; then a plain INSERT,
  // whose failure (a constraint the file should not have, a full disk) is an
  // error: a row is never dropped in silence, as INSERT OR IGNORE would.
  Transaction tx(db, Transaction::Kind::Write);
  Stmt run_present(db, "SELECT 1 FROM runs WHERE run_id = ?1", "runs");
  Stmt add_run(
      db,
      "INSERT INTO runs(run_id, experiment, git_commit, commit_time, "
      "started_utc, model_sha256, config_hash, machine, folder, added_utc, model_label, "
      "git_dirty, protocol) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
      "runs");
  // A run added before version 5 has no protocol: re-adding its folder
  // records it (its id covers the config hash, so it is this folder's).
  Stmt set_protocol(db, "UPDATE runs SET protocol = ?2 WHERE run_id = ?1 AND protocol IS NULL",
                    "runs");
  for (const ModelRun& m : models) {
    run_present.reset();
    if (run_present.bind(1, m.run_id).step()) {  // added before (its cells may not all be)
      set_protocol.reset();
      set_protocol.bind(1, m.run_id).bind(2, protocol).step();
      continue;
    }
    add_run.reset();
    add_run.bind(1, m.run_id).bind(2, experiment).bind(3, r.git_commit);
    if (when)
      add_run.bind(4, *when);
    else
      add_run.bind_null(4);
    add_run.bind(5, started).bind(6, m.sha256).bind(7, chash).bind(8, machine);
    add_run.bind(9, run.dir().substr(0, kMaxFieldBytes)).bind(10, now_utc());
    if (several)
      add_run.bind(11, m.label);
    else
      add_run.bind_null(11);
    add_run.bind(12, int64_t{r.git_dirty ? 1 : 0});
    add_run.bind(13, protocol);
    add_run.step();
  }
  Stmt cell_present(db, "SELECT 1 FROM cells WHERE run_id = ?1 AND cell_id = ?2", "cells");
  Stmt add_cell(db,
                "INSERT INTO cells(run_id, cell_id, configuration, task, instance, "
                "score, spec) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                "cells");
  for (size_t i = 0; i < cells.size(); ++i) {
    const json& c = cells[i];
    const std::string file = run.path("cells/" + c["id"].get<std::string>() + ".json");
    const std::string& run_id = models[cell_model[i]].run_id;
    const std::string cell_id = field(c, "id", file);
    cell_present.reset();
    if (cell_present.bind(1, run_id).bind(2, cell_id).step()) {
      ++r.cells_present;
      continue;
    }
    add_cell.reset();
    add_cell.bind(1, run_id)
        .bind(2, cell_id)
        .bind(3, field(c["policy"], "label", file + ": /policy"))
        .bind(4, field(c["instance"], "task", file + ": /instance"))
        .bind(5, field(c["instance"], "id", file + ": /instance"))
        .bind(6, c["score"].get<double>());
    const std::string spec = field(c["policy"], "spec", file + ": /policy", false);
    if (spec.empty())
      add_cell.bind_null(7);
    else
      add_cell.bind(7, spec);
    add_cell.step();
    ++r.cells_added;
  }
  tx.commit();
  return r;
}

}  // namespace kvbench::history
