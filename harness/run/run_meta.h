// What a run folder records about where its numbers came from: kvbench's git
// commit, the model file's sha256, the CPU, threads and library versions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kvbench {

// {git_commit, model, model_sha256, cpu, cores, threads, compiler, libraries{...}, started_utc}
nlohmann::json collect_run_meta(const std::string& model_path, int threads);

std::string cpu_model_name();

}  // namespace kvbench
