// Timings a run's owner withholds from its reports: meta.json's
// "speed_withheld", a reason, set by `kvbench report DIR --withhold-speed
// REASON`. A job whose processes stood stopped (SIGSTOP) or shared the cores
// with other work has timing fields that count that time: its scores, NLLs
// and memory are measurements, its speed is not. The cells keep their raw
// timing fields; the report, compare and merge treat them as absent.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/run_folder.h"  // kMaxSpeedWithheldBytes: its reader's bound

namespace kvbench {

// The reason as given on the command line, checked: non-empty, at most
// kMaxSpeedWithheldBytes, one line of valid UTF-8 (InputError otherwise).
std::string checked_speed_reason(const std::string& reason);

// meta.json's reason, "" when the run's speed is reported (RunFolder::meta()
// checked the field).
std::string speed_withheld(const nlohmann::json& meta);

// The cells without what their timing fields say about speed: every timing
// field but peak_rss_bytes (memory, not time) is dropped.
std::vector<nlohmann::json> without_speed(std::vector<nlohmann::json> cells);

// Removes the speed plots an earlier render drew in `plots_dir`
// (speed.png/.svg, speed-K.png/.svg with several models): a withheld run's
// folder shows no speed. RunFolder::open checked that plots/ holds regular
// files only.
void remove_speed_plots(const std::string& plots_dir);

}  // namespace kvbench
