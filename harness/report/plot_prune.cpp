#include "harness/report/plot_prune.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

namespace kvbench {

bool report_plot_name(const std::string& file_name) {
  const std::filesystem::path p(file_name);
  const std::string ext = p.extension().string(), stem = p.stem().string();
  if (ext != ".png" && ext != ".svg") return false;
  for (const char* prefix : {"heatmaps", "needle-layers", "score-vs-", "speed"})
    if (stem.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> remove_undrawn_plots(const std::string& plots_dir,
                                              const std::vector<std::string>& drawn) {
  std::set<std::string> keep;
  for (const auto& f : drawn) keep.insert(std::filesystem::path(f).filename().string());
  std::error_code ec;
  std::vector<std::string> gone;
  for (const auto& e : std::filesystem::directory_iterator(plots_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (report_plot_name(name) && !keep.count(name)) gone.push_back(name);
  }
  std::sort(gone.begin(), gone.end());
  for (const auto& name : gone) std::filesystem::remove(plots_dir + "/" + name, ec);
  return gone;
}

}  // namespace kvbench
