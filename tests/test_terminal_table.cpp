// The table run prints: aligned, within the terminal's width, labels escaped.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "harness/report/terminal_table.h"

namespace kvbench {
namespace {

// Display columns of a line, one per UTF-8 code point.
size_t width_of(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TableRow row(const std::string& label, double score, double lo, double hi) {
  TableRow r;
  r.label = label;
  r.cells = 104;
  r.score = score;
  r.score_ci = {lo, hi};
  r.memory_rel = 0.25;
  r.speed_rel = 1.5;
  r.score_rel = score / 0.9;
  r.score_rel_ci = {lo / 0.9, hi / 0.9};
  return r;
}

std::vector<TerminalSection> sample() {
  TableRow full = row("full", 0.9, 0.83, 0.95);
  full.memory_rel = 1.0;
  full.speed_rel = 1.0;
  full.score_rel = 1.0;
  full.score_rel_ci = {NAN, NAN};
  return {{"",
           {full, row("SnapKV (budget 0.25) with a long label that goes on", 0.5, 0.4, 0.6),
            row("evil\x1b[31m\xe2\x80\xae label", 0.25, 0.17, 0.34)}}};
}

TEST(TerminalTable, AlignedWithIntervalsWhenWide) {
  const auto lines = lines_of(terminal_table(sample(), 200));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("Configuration", 0), 0u);
  EXPECT_NE(lines[2].find("0.500 [0.400, 0.600]"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("55.6% [44.4, 66.7]"), std::string::npos) << lines[2];
  EXPECT_NE(lines[1].find("100.0%  1.00x"), std::string::npos) << lines[1];
  // Every line the same width: the columns line up.
  for (const auto& l : lines) EXPECT_EQ(width_of(l), width_of(lines[0])) << l;
  // The label escaped for the terminal: no ESC, no bidi override.
  EXPECT_EQ(lines[3].find('\x1b'), std::string::npos);
  EXPECT_EQ(lines[3].find("\xe2\x80\xae"), std::string::npos);
  EXPECT_NE(lines[3].find("evil\\x1b[31m\\u202e label"), std::string::npos) << lines[3];
}

TEST(TerminalTable, FitsTheWidthByCuttingLabelsThenIntervals) {
  const std::string wide = terminal_table(sample(), 200);
  for (int width : {90, 80, 60, 50}) {
    const auto lines = lines_of(terminal_table(sample(), width));
    for (const auto& l : lines) EXPECT_LE(width_of(l), static_cast<size_t>(width)) << width << l;
  }
  const auto cut = lines_of(terminal_table(sample(), 80));
  EXPECT_NE(cut[2].find("…"), std::string::npos) << cut[2];
  EXPECT_NE(cut[2].find("0.500 [0.400, 0.600]"), std::string::npos) << cut[2];
  const auto narrow = lines_of(terminal_table(sample(), 50));
  EXPECT_EQ(narrow[2].find('['), std::string::npos) << narrow[2];
  EXPECT_NE(narrow[2].find("0.500"), std::string::npos) << narrow[2];
}

TEST(TerminalTable, OneBlockPerModel) {
  auto s = sample();
  s[0].heading = "smollm2";
  s.push_back({"gemma\n3", s[0].rows});
  const auto lines = lines_of(terminal_table(s, 200));
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[0], "smollm2");
  EXPECT_EQ(lines[6], "gemma\\n3");
}

}  // namespace
}  // namespace kvbench
