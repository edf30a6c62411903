// Progress of a long run on stderr: on a terminal one line rewritten in place
// (cells done / total, the current cell, elapsed, ETA); otherwise one plain
// log line per finished cell, so CI logs and Slurm output stay readable.
#pragma once

#include <chrono>
#include <string>

namespace kvbench {

class Progress {
 public:
  // total: cells to run in this invocation; already: cells found done (resume).
  Progress(int total, int already, bool quiet = false);
  void start(const std::string& cell);
  void finish(const std::string& cell, double score);
  void done();

 private:
  static std::string clock(double seconds);
  void draw(const std::string& current);
  int total_, finished_ = 0, already_;
  bool tty_, quiet_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace kvbench
