#include "harness/run/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace kvbench {

Progress::Progress(int total, int already, bool quiet)
    : total_(total),
      already_(already),
      tty_(isatty(STDERR_FILENO)),
      quiet_(quiet),
      t0_(std::chrono::steady_clock::now()) {
  if (!quiet_ && already_ > 0)
    std::cerr << "resuming: " << already_ << " cell(s) already done, " << total_ << " to run\n";
}

std::string Progress::clock(double s) {
  char buf[32];
  const int t = static_cast<int>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", t / 3600, t / 60 % 60);
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", t / 60, t % 60);
  return buf;
}

void Progress::draw(const std::string& current) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::string eta = "?";
  if (finished_ > 0) eta = clock(elapsed / finished_ * (total_ - finished_));
  char head[96];
  std::snprintf(head, sizeof head, "[%d/%d] %3.0f%% elapsed %s ETA %s  ", finished_, total_,
                total_ ? 100.0 * finished_ / total_ : 100.0, clock(elapsed).c_str(), eta.c_str());
  std::string line = head + current;
  if (line.size() > 118) line = line.substr(0, 115) + "...";
  std::cerr << "\r" << line << "\033[K" << std::flush;
}

void Progress::start(const std::string& cell) {
  if (!quiet_ && tty_) draw(cell);
}

void Progress::finish(const std::string& cell, double score) {
  ++finished_;
  if (quiet_) return;
  if (tty_) {
    draw(cell);
    return;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "score %.3f", score);
  std::cerr << "[" << finished_ << "/" << total_ << "] " << cell << " " << buf << " (elapsed "
            << clock(elapsed) << ", ETA " << clock(elapsed / finished_ * (total_ - finished_))
            << ")\n";
}

void Progress::done() {
  if (!quiet_ && tty_) std::cerr << "\n";
}

}  // namespace kvbench
