// The plots a render did not draw. A report folder is re-rendered after its
// cells change (a merge with fewer tasks, a model dropped, speed withheld):
// figures the new cells do not produce would otherwise stay in plots/ beside
// the new ones, unlinked but looking current. After gnuplot succeeded, the
// report removes every file in plots/ that has one of write_plots' names
// (plots.h) and was not written by this render; other files are left alone.
#pragma once

#include <string>
#include <vector>

namespace kvbench {

// True for a file name write_plots can produce: heatmaps*, needle-layers*,
// score-vs-*, speed* with the extension .png or .svg.
bool report_plot_name(const std::string& file_name);

// Removes from `plots_dir` each file with a report plot's name that is not
// among `drawn` (write_plots' files, "plots/<name>"). RunFolder::open checked
// that plots/ holds regular files only. Returns the names removed, sorted.
std::vector<std::string> remove_undrawn_plots(const std::string& plots_dir,
                                              const std::vector<std::string>& drawn);

}  // namespace kvbench
