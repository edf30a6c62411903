// Plot files are written like every other file kvbench writes: gnuplot
// writes each plot to a temporary beside its target, "<target>.tmp.<pid>",
// which kvbench created first (exclusively, never through a link); once
// gnuplot succeeded, each temporary is renamed over its target. A plot is
// therefore never opened through an existing name: a hard link to an old
// plot (`cp -al run copy`) keeps its content, and a reader never sees half
// a PNG. Temporaries are removed on failure and by the SIGINT/SIGTERM
// handlers; a kill -9 leaves them to the next writer (the run folder's lock
// sweep, or remove_stale_temporaries for a file of its own).
#pragma once

#include <string>
#include <vector>

namespace kvbench {

// The file gnuplot writes for `target`: the script's `set output` names it
// (through gnuplot_output, harness/encode/gnuplot.h).
std::string plot_temporary(const std::string& target);

struct PlotRun {
  int status = 0;               // gnuplot's exit code; 127: could not be started
  std::vector<bool> published;  // per target: written and renamed into place
};

// Creates every target's temporary (InputError naming a target that exists
// and is not a regular file, or whose folder is not writable), runs gnuplot
// on `script`, and when it exits 0 renames each non-empty temporary over its
// target; otherwise publishes nothing. `inherit_fd`: as run_with_input's (a
// run folder's lock, held by gnuplot as long as it writes there).
PlotRun run_gnuplot(const std::vector<std::string>& targets, const std::string& script,
                    int inherit_fd = -1);

}  // namespace kvbench
