// A run folder, results/<experiment>-<timestamp>/:
//   config.json      the resolved experiment config (defaults filled)
//   meta.json        git commit, model sha256, CPU, threads, library versions, start time
//   cells/<id>.json  one file per completed cell, written atomically: a run
//                    interrupted at any point (Ctrl-C, kill -9) resumes by
//                    running exactly the cells without a file
//   metrics.json, predictions.jsonl, table.md, table.csv, plots/, report.md,
//   report.html      derived from the cells by `kvbench report` (re-creatable)
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvbench {

class RunFolder {
 public:
  // Creates <output>/<name>-<UTC timestamp>/ (a numeric suffix when it
  // exists) with config.json and meta.json. InputError when not writable.
  static RunFolder create(const std::string& output, const std::string& name,
                          const nlohmann::json& config, const nlohmann::json& meta);
  // An existing folder (for --resume, report, merge); InputError when it has
  // no readable config.json.
  static RunFolder open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  nlohmann::json meta() const;

  bool has_cell(const std::string& id) const;
  void write_cell(const std::string& id, const nlohmann::json& cell) const;
  // Every completed cell, sorted by id (deterministic order).
  std::vector<nlohmann::json> cells() const;
  std::string path(const std::string& relative) const { return dir_ + "/" + relative; }
  // Removes the folder and everything in it (a run that failed before any cell).
  void remove() const;

 private:
  std::string dir_;
  nlohmann::json config_;
};

// Reads a JSON file; InputError with the path (and parse position) on failure.
nlohmann::json read_json_file(const std::string& path);
// JSON text with invalid UTF-8 (model output can hold partial characters)
// replaced by U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json& value, int indent = 2);
// Writes pretty JSON atomically.
void write_json_atomic(const std::string& path, const nlohmann::json& value);

}  // namespace kvbench
