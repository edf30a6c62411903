#include "model/common/printable.h"

#include <algorithm>
#include <cstdint>

namespace kvbench {
namespace {

void append_hex_escape(std::string& out, uint8_t c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// True for U+0080..U+009F (C1 controls: some terminals act on them).
bool c1_control(std::string_view s, size_t i, size_t n) {
  return n == 2 && static_cast<uint8_t>(s[i]) == 0xC2 && static_cast<uint8_t>(s[i + 1]) < 0xA0;
}

// The code point of the valid UTF-8 sequence of n bytes at s[i].
uint32_t code_point(std::string_view s, size_t i, size_t n) {
  static constexpr uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = static_cast<uint8_t>(s[i]) & kLeadMask[n];
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  return cp;
}

void append_code_point_escape(std::string& out, uint32_t cp) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 15];
}

}  // namespace

bool invisible_control(uint32_t cp) {
  return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return len;
}

bool one_line_utf8(std::string_view s) {
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    const auto c = static_cast<uint8_t>(s[i]);
    n = utf8_sequence(s, i);
    if (n == 0 || c < 0x20 || c == 0x7F) return false;
  }
  return true;
}

std::string escaped_text(std::string_view s, size_t max_bytes, bool escape_backslash) {
  std::string out;
  size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t n = utf8_sequence(s, i);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\\' && escape_backslash)
      out += "\\\\";
    else if (n == 0 || c < 0x20 || c == 0x7F)
      append_hex_escape(out, c);
    else if (c1_control(s, i, n))
      for (size_t k = 0; k < n; ++k) append_hex_escape(out, static_cast<uint8_t>(s[i + k]));
    else if (n == 3 && invisible_control(code_point(s, i, n)))
      append_code_point_escape(out, code_point(s, i, n));
    else
      out.append(s.substr(i, n));
    i += std::max<size_t>(n, 1);
  }
  if (i < s.size()) out += "...";
  return out;
}

}  // namespace kvbench
