#include "harness/report/plot_script.h"

#include "harness/encode/gnuplot.h"
#include "harness/report/plot_files.h"
#include "harness/report/plots.h"

namespace kvbench::plot {

std::string label(const std::string& s) {
  std::string escaped;
  for (char c : s) {
    if (c == '_' || c == '^' || c == '@' || c == '&' || c == '~' || c == '{' || c == '}' ||
        c == '\\')
      escaped += "\\";
    escaped += c;
  }
  return gnuplot_string(escaped);
}

std::string tic_label(const std::string& s) {
  std::string doubled;
  for (char c : s) doubled += c == '%' ? std::string("%%") : std::string(1, c);
  return label(doubled);
}

std::string label_array(const std::string& name, const std::vector<std::string>& labels) {
  std::string out = "array " + name + "[" + std::to_string(labels.size()) + "]\n";
  for (size_t i = 0; i < labels.size(); ++i)
    out += name + "[" + std::to_string(i + 1) + "] = " + label(labels[i]) + "\n";
  return out;
}

std::string length_label(int64_t n) {
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n / 1024) + "k";
  if (n >= 1000 && n % 1000 == 0)
    return std::to_string(n / 1000) + "k";  // 8000 (SmolLM2's 8k less room)
  return std::to_string(n);
}

const char* series_colour(size_t j) {
  // Eight hues apart from one another (the old palette had two greens, two
  // purples and two oranges that read as one).
  static const char* kColours[] = {"#2b83ba", "#d7191c", "#1a9641", "#7b3294",
                                   "#e66101", "#00a0a0", "#8c564b", "#555555"};
  return kColours[j % 8];
}

int series_point(size_t j) {
  static const int kPoints[] = {7, 5, 9, 11, 13, 15, 4, 6, 8, 10, 12, 14, 1, 2, 3, 16};
  return kPoints[j % 16];
}

std::string series_style(size_t j) {
  const size_t round = j / 8;  // 0 for the first eight: solid lines, filled circles
  return std::string("lc rgb '") + series_colour(j) + "' pt " +
         std::to_string(series_point(round)) + " dt " + std::to_string(round % 5 + 1);
}

std::string shorten(const std::string& s, size_t max_chars) {
  size_t chars = 0, i = 0;
  for (; i < s.size(); ++i) {
    // Count lead bytes only: continuation bytes are 10xxxxxx.
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (chars == max_chars) return s.substr(0, i) + "…";
    ++chars;
  }
  return s;
}

void Script::emit(const std::string& dir, const std::string& stem, const std::string& size,
                  const std::string& commands) {
  for (const char* ext : {"png", "svg"}) {
    const std::string file = "plots/" + stem + "." + ext;
    body << (std::string(ext) == "png"
                 ? "set terminal pngcairo enhanced font 'Sans,10' size " + size + "\n"
                 : "set terminal svg enhanced font 'Sans,10' size " + size + "\n")
         << "set output " << gnuplot_output(plot_temporary(dir + "/" + file)) << "\n"
         << "reset\nset grid\n"
         << commands << "unset output\n";
    files.push_back(file);
  }
}

}  // namespace kvbench::plot
