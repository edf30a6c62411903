#include "harness/report/terminal_table.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "model/common/printable.h"

namespace kvbench {

namespace {

// Display columns of UTF-8 text, one per code point: the labels are escaped
// (no control characters), and the wide East Asian characters a label could
// hold only cost alignment, never a broken line.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence(s, i);
    i += len ? len : 1;
    ++n;
  }
  return n;
}

// s cut to `max` display columns, its last one "…" when anything was cut.
std::string fit(const std::string& s, size_t max) {
  if (columns(s) <= max) return s;
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size() && n + 1 < max;) {
    const size_t len = std::max<size_t>(1, utf8_sequence(s, i));
    out += s.substr(i, len);
    i += len;
    ++n;
  }
  return out + "…";
}

std::string pad_right(const std::string& s, size_t w) {
  return s + std::string(w > columns(s) ? w - columns(s) : 0, ' ');
}
std::string pad_left(const std::string& s, size_t w) {
  return std::string(w > columns(s) ? w - columns(s) : 0, ' ') + s;
}

bool finite(const stats::Interval& ci) { return !std::isnan(ci.lo) && !std::isnan(ci.hi); }

// One row's cells after the label: memory, speed, retention, score, n.
std::vector<std::string> figures(const TableRow& r, bool intervals) {
  std::vector<std::string> c;
  c.push_back(r.memory_rel ? fmt::format("{:.1f}%", *r.memory_rel * 100) : "–");
  c.push_back(r.speed_rel ? fmt::format("{:.2f}x", *r.speed_rel) : "–");
  if (!r.score_rel)
    c.push_back("–");
  else if (intervals && finite(r.score_rel_ci))
    c.push_back(fmt::format("{:.1f}% [{:.1f}, {:.1f}]", *r.score_rel * 100, r.score_rel_ci.lo * 100,
                            r.score_rel_ci.hi * 100));
  else
    c.push_back(fmt::format("{:.1f}%", *r.score_rel * 100));
  if (intervals && finite(r.score_ci))
    c.push_back(fmt::format("{:.3f} [{:.3f}, {:.3f}]", r.score, r.score_ci.lo, r.score_ci.hi));
  else
    c.push_back(fmt::format("{:.3f}", r.score));
  c.push_back(std::to_string(r.cells));
  return c;
}

constexpr size_t kMinLabel = 12;

}  // namespace

int terminal_width() {
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long v = std::strtol(c, &end, 10);
    if (end != c && *end == '\0' && v >= 20 && v <= 10000) return static_cast<int>(v);
  }
  return 120;
}

std::string terminal_table(const std::vector<TerminalSection>& sections, int width) {
  // The widest layout that fits: intervals first, then without them (the
  // narrowest is about 50 columns; below it lines are longer than the width).
  for (const bool intervals : {true, false}) {
    const std::vector<std::string> head = {"Configuration",
                                           "Memory",
                                           "Speed",
                                           intervals ? "Retention [95% CI]" : "Retention",
                                           intervals ? "Score [95% CI]" : "Score",
                                           "n"};
    std::vector<size_t> w(head.size());
    for (size_t k = 0; k < head.size(); ++k) w[k] = columns(head[k]);
    std::vector<std::vector<std::vector<std::string>>> cells(sections.size());
    for (size_t s = 0; s < sections.size(); ++s)
      for (const auto& r : sections[s].rows) {
        std::vector<std::string> row = {escaped_text(r.label, 300)};
        for (auto& f : figures(r, intervals)) row.push_back(std::move(f));
        for (size_t k = 0; k < row.size(); ++k) w[k] = std::max(w[k], columns(row[k]));
        cells[s].push_back(std::move(row));
      }
    size_t rest = 0;  // the figures' columns and the two spaces between columns
    for (size_t k = 1; k < w.size(); ++k) rest += w[k] + 2;
    const size_t avail =
        width > 0 && static_cast<size_t>(width) > rest ? static_cast<size_t>(width) - rest : 0;
    if (avail < kMinLabel && intervals) continue;
    w[0] = std::min(w[0], std::max(avail, kMinLabel));
    std::string out;
    const auto line = [&](const std::vector<std::string>& row) {
      out += pad_right(fit(row[0], w[0]), w[0]);
      for (size_t k = 1; k < row.size(); ++k) out += "  " + pad_left(row[k], w[k]);
      out += "\n";
    };
    for (size_t s = 0; s < sections.size(); ++s) {
      if (!sections[s].heading.empty())
        out += (s ? "\n" : "") + escaped_text(sections[s].heading, 200) + "\n";
      line(head);
      for (const auto& row : cells[s]) line(row);
    }
    return out;
  }
  return "";
}

}  // namespace kvbench
