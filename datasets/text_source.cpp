#include "datasets/text_source.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include "model/common/error.h"

namespace kvbench {

std::string read_text_lines(const std::string& path, int64_t first, int64_t last) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw InputError(path +
                     ": cannot open file (is its Debian package installed? run scripts/setup.sh)");
  boost::iostreams::filtering_istream in;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    in.push(boost::iostreams::gzip_decompressor());
  in.push(file);
  std::string out, line;
  int64_t n = 0;
  try {
    while (std::getline(in, line)) {
      ++n;
      if (n < first) continue;
      if (last > 0 && n > last) break;
      out += line;
      out += '\n';
    }
  } catch (const boost::iostreams::gzip_error& e) {
    throw InputError(path + ": corrupt gzip data (" + e.what() + ")");
  }
  if (n < first)
    throw InputError(path + ": has " + std::to_string(n) + " lines, fewer than " +
                     std::to_string(first));
  return out;
}

namespace datasets {
namespace {

bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_alpha(char c) { return is_upper(c) || is_lower(c); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}
size_t indent_of(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  return i;
}

// A heading underline ("=====", "*****", "-----") or a rule.
bool is_rule(std::string_view line) {
  const size_t b = indent_of(line);
  if (line.size() - b < 3) return false;
  return std::all_of(line.begin() + b, line.end(), [](char c) {
    return c == '=' || c == '*' || c == '-' || c == '.' || c == '_' || c == '\r';
  });
}

// "3.4 Standard C", "1.2.8. Named pipes", "Appendix A GNU Free ...": numbered headings.
bool is_numbered_heading(std::string_view line) {
  size_t i = indent_of(line);
  if (line.substr(i).starts_with("Appendix ")) return true;
  const size_t start = i;
  while (i < line.size() && (is_digit(line[i]) || line[i] == '.')) ++i;
  if (i == start) {  // "A.1 Title"
    if (i + 1 < line.size() && is_upper(line[i]) && line[i + 1] == '.')
      i += 2;
    else
      return false;
    while (i < line.size() && (is_digit(line[i]) || line[i] == '.')) ++i;
  }
  return i < line.size() && line[i] == ' ';
}

// Characters that prose (as opposed to code, paths and markup) rarely has.
bool is_markup_char(char c) {
  static constexpr std::string_view kMarkup = "{}[]<>|\\$=_@#~^`*";
  return kMarkup.find(c) != std::string_view::npos || static_cast<unsigned char>(c) >= 0x80 ||
         (c < ' ' && c != '\t' && c != '\n');
}

// One paragraph's lines -> one line of prose, or "" to drop it.
std::string clean_paragraph(const std::vector<std::string_view>& lines) {
  if (lines.empty()) return {};
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    const std::string_view body = l.substr(indent_of(l));
    if (is_rule(l)) return {};
    if (i == 0 && lines.size() <= 2 && is_numbered_heading(l)) return {};
    // Shell prompts, bullets, menu entries, table cells.
    if (body.starts_with("$ ") || body.starts_with("# ") || body.starts_with("* ") ||
        body.starts_with("o ") || body.starts_with("- ") || body.starts_with("+ ") ||
        body.starts_with("Tip") || body.starts_with("Note") || body.starts_with("Caution") ||
        body.starts_with("Warning") || body.starts_with("Important"))
      return {};
  }
  // Code examples are indented deeper than the surrounding prose: a paragraph
  // whose continuation lines are indented 5+ columns (Texinfo examples) or
  // more than its second line is not prose.
  if (lines.size() > 1) {
    const size_t second = indent_of(lines[1]);
    for (size_t i = 2; i < lines.size(); ++i)
      if (indent_of(lines[i]) != second) return {};
    if (second >= 5 && indent_of(lines[0]) >= 5) return {};
  } else if (indent_of(lines[0]) >= 8) {
    return {};
  }
  // Join lines; "exam-" + "ple" -> "example" when a word was split.
  std::string text;
  for (const std::string_view l : lines) {
    std::string_view body = l.substr(indent_of(l));
    while (!body.empty() && (body.back() == ' ' || body.back() == '\r' || body.back() == '\t'))
      body.remove_suffix(1);
    if (body.empty()) continue;
    if (!text.empty()) {
      const bool hyphen_break = text.size() >= 2 && text.back() == '-' &&
                                is_lower(text[text.size() - 2]) && is_lower(body.front());
      if (hyphen_break)
        text.pop_back();
      else
        text += ' ';
    }
    text += body;
  }
  // Single spaces (Texinfo puts two after a sentence).
  std::string out;
  for (char c : text) {
    if (c == '\t') c = ' ';
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  if (out.size() < 80) return {};
  if (out.find("*note") != std::string::npos || out.find("*Note") != std::string::npos) return {};
  if (out.find("://") != std::string::npos) return {};
  size_t letters = 0, markup = 0;
  for (char c : out) {
    if (is_alpha(c)) ++letters;
    if (is_markup_char(c)) ++markup;
  }
  if (markup > 0) return {};
  if (letters < out.size() * 7 / 10) return {};
  if (!is_upper(out.front()) && !is_digit(out.front())) return {};
  const char last = out.back();
  const char before = out.size() > 1 ? out[out.size() - 2] : ' ';
  const bool ends = last == '.' || last == '?' || last == '!' ||
                    ((last == ')' || last == '"' || last == '\'') &&
                     (before == '.' || before == '?' || before == '!'));
  if (!ends) return {};
  return out;
}

bool is_abbreviation(std::string_view word) {
  static constexpr std::array<std::string_view, 16> kAbbrev = {
      "e.g", "i.e", "etc", "Mr",  "Mrs", "Ms", "Dr", "vs",
      "cf",  "Inc", "No",  "Fig", "St",  "Jr", "Sr", "al"};
  if (word.size() == 1 && is_alpha(word[0])) return true;  // initials: "J. Smith"
  for (const auto a : kAbbrev)
    if (word == a) return true;
  return false;
}

Prose build_prose(const std::vector<std::string>& paths) {
  Prose p;
  for (const auto& path : paths) {
    for (const std::string& para : prose_paragraphs(read_text_lines(path))) {
      const auto sentences = split_sentences(para);
      for (size_t i = 0; i < sentences.size(); ++i) {
        p.sentences.push_back(sentences[i]);
        p.starts_paragraph.push_back(i == 0);
      }
    }
  }
  if (p.sentences.size() < 100)
    throw InputError(paths.front() + ": too little prose after cleaning (" +
                     std::to_string(p.sentences.size()) + " sentences)");
  return p;
}

// Typographic UTF-8 (no-break spaces, curly quotes, dashes) as ASCII; other
// non-ASCII text stays and makes its paragraph "not prose".
std::string to_ascii(std::string_view raw) {
  static constexpr std::pair<std::string_view, std::string_view> kMap[] = {
      {"\xC2\xA0", " "},       {"\xE2\x80\x98", "'"},  {"\xE2\x80\x99", "'"},
      {"\xE2\x80\x9C", "\""},  {"\xE2\x80\x9D", "\""}, {"\xE2\x80\x93", "-"},
      {"\xE2\x80\x94", " - "}, {"\xE2\x80\xA6", "..."}};
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    bool mapped = false;
    if (static_cast<unsigned char>(raw[i]) >= 0x80) {
      for (const auto& [from, to] : kMap) {
        if (raw.substr(i, from.size()) == from) {
          out += to;
          i += from.size();
          mapped = true;
          break;
        }
      }
    }
    if (!mapped) out += raw[i++];
  }
  return out;
}

}  // namespace

std::vector<std::string> prose_paragraphs(std::string_view raw_text) {
  const std::string ascii = to_ascii(raw_text);
  const std::string_view raw = ascii;
  std::vector<std::string> out;
  std::vector<std::string_view> lines;
  auto flush = [&] {
    std::string p = clean_paragraph(lines);
    if (!p.empty()) out.push_back(std::move(p));
    lines.clear();
  };
  size_t at = 0;
  while (at < raw.size()) {
    size_t end = raw.find('\n', at);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view line = raw.substr(at, end - at);
    at = end + 1;
    if (is_blank(line))
      flush();
    else
      lines.push_back(line);
  }
  flush();
  return out;
}

std::vector<std::string> split_sentences(std::string_view p) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c != '.' && c != '?' && c != '!') continue;
    size_t j = i + 1;
    while (j < p.size() && (p[j] == '"' || p[j] == '\'' || p[j] == ')')) ++j;
    if (j + 1 >= p.size() || p[j] != ' ') continue;
    const char next = p[j + 1];
    if (!is_upper(next) && next != '"' && next != '\'' && next != '(') continue;
    if (c == '.') {
      size_t w = i;
      while (w > begin && p[w - 1] != ' ' && p[w - 1] != '(') --w;
      if (is_abbreviation(p.substr(w, i - w))) continue;
    }
    out.emplace_back(p.substr(begin, j - begin));
    begin = j + 1;
    i = j;
  }
  if (begin < p.size()) out.emplace_back(p.substr(begin));
  return out;
}

const Prose& essay_prose() {
  static const Prose prose = build_prose({kGnuStandardsText, kGnuMaintainText});
  return prose;
}

const Prose& reference_prose() {
  static const Prose prose = build_prose({kDebianReferenceText});
  return prose;
}

const std::vector<std::string>& dictionary_words() {
  static const std::vector<std::string> words = [] {
    const std::string text = read_text_lines(kWordList);
    std::vector<std::string> w;
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = text.find('\n', at);
      const std::string_view line(text.data() + at, end - at);
      at = end + 1;
      if (line.size() >= 4 && line.size() <= 8 && std::all_of(line.begin(), line.end(), is_lower))
        w.emplace_back(line);
    }
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    if (w.size() < 1000)
      throw InputError(std::string(kWordList) + ": too few words (" + std::to_string(w.size()) +
                       ")");
    return w;
  }();
  return words;
}

}  // namespace datasets
}  // namespace kvbench
