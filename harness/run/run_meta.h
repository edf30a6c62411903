// What a run folder records about where its numbers came from: kvbench's git
// commit, the model file's sha256, the CPU, threads and library versions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/experiment.h"

namespace kvbench {

// {git_commit, [git_dirty], model, model_sha256, cpu, cores, threads, compiler, libraries{...},
// started_utc}: git_commit is the commit the binary was built from
// (scripts/build_info.cmake), git_dirty true when tracked files differed from
// it at build time;
// for one model; with several, "models": [{path, label, sha256}, ...] in
// place of model and model_sha256.
nlohmann::json collect_run_meta(const std::vector<ModelEntry>& models, int threads);

// The sha256 of model `index` as `meta` (collect_run_meta's) records it.
std::string model_sha256(const nlohmann::json& meta, size_t index);

// A resumed run must use the files it started with: InputError naming the
// model (and `meta_file`) whose sha256 differs between the run's meta.json
// (`old_meta`) and now (`meta`), or when the number of models differs.
void check_same_models(const nlohmann::json& old_meta, const nlohmann::json& meta,
                       const std::string& meta_file);

// The inputs of a run besides its models, as meta.json's "inputs" records
// them: {"config.json": sha256 of the run folder's config.json text,
// "jsonl": {path: sha256} of every instance file the experiment reads}.
nlohmann::json input_hashes(const ExperimentConfig& config, const std::string& config_json_text);

// A resumed run must read what it started with: InputError naming the file
// (config.json, an instance file) whose sha256 differs between the run's
// meta.json (`old_meta`, where it recorded "inputs") and now (`inputs`).
void check_same_inputs(const nlohmann::json& old_meta, const nlohmann::json& inputs,
                       const std::string& run_dir);

std::string cpu_model_name();

}  // namespace kvbench
