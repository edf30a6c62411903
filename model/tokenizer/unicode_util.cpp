#include "model/tokenizer/unicode_util.h"

#include <array>

namespace kvbench::unicode {

size_t utf8_len_from_lead(unsigned char lead) {
  static constexpr size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

namespace {

bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

uint32_t decode_one(std::string_view text, size_t& offset) {
  const auto at = [&](size_t i) { return static_cast<unsigned char>(text[offset + i]); };
  const size_t left = text.size() - offset;
  const unsigned char b0 = at(0);
  if (b0 < 0x80) {
    offset += 1;
    return b0;
  }
  // The checks follow llama.cpp's unicode_cpt_from_utf8 bit by bit: only the
  // lead byte's prefix and the continuation bytes' prefixes are checked.
  if ((b0 & 0x40) && !(b0 & 0x20)) {
    if (left >= 2 && is_cont(at(1))) {
      const uint32_t cpt = (uint32_t(b0 & 0x1F) << 6) | (at(1) & 0x3F);
      offset += 2;
      return cpt;
    }
  } else if ((b0 & 0x40) && !(b0 & 0x10)) {
    if (left >= 3 && is_cont(at(1)) && is_cont(at(2))) {
      const uint32_t cpt =
          (uint32_t(b0 & 0x0F) << 12) | (uint32_t(at(1) & 0x3F) << 6) | (at(2) & 0x3F);
      offset += 3;
      return cpt;
    }
  } else if ((b0 & 0x40) && !(b0 & 0x08)) {
    if (left >= 4 && is_cont(at(1)) && is_cont(at(2)) && is_cont(at(3))) {
      const uint32_t cpt = (uint32_t(b0 & 0x07) << 18) | (uint32_t(at(1) & 0x3F) << 12) |
                           (uint32_t(at(2) & 0x3F) << 6) | (at(3) & 0x3F);
      // llama.cpp would throw later when re-encoding such a value; treating
      // it as one invalid byte keeps us total.
      if (cpt <= 0x10FFFF) {
        offset += 4;
        return cpt;
      }
    }
  }
  offset += 1;
  return kReplacementChar;
}

std::vector<uint32_t> decode(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) out.push_back(decode_one(text, offset));
  return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt < 0x80) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

std::string to_utf8(uint32_t cpt) {
  std::string s;
  append_utf8(s, cpt);
  return s;
}

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t min;
    uint32_t cpt;
    if ((b0 & 0xE0) == 0xC0) {
      n = 2, min = 0x80, cpt = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      n = 3, min = 0x800, cpt = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      n = 4, min = 0x10000, cpt = b0 & 0x07;
    } else {
      return false;
    }
    if (text.size() - i < n) return false;
    for (size_t k = 1; k < n; ++k) {
      const unsigned char c = static_cast<unsigned char>(text[i + k]);
      if (!is_cont(c)) return false;
      cpt = (cpt << 6) | (c & 0x3F);
    }
    if (cpt < min || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

namespace {

struct ByteTables {
  std::array<uint32_t, 256> to_cpt{};
  std::array<std::string, 256> to_utf8;
  // Every mapped code point is below 0x144, so a flat table inverts it.
  std::array<int16_t, 0x144> from_cpt{};

  ByteTables() {
    from_cpt.fill(-1);
    const auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      to_cpt[b] = printable(b) ? uint32_t(b) : next++;
      to_utf8[b] = to_utf8_str(to_cpt[b]);
      from_cpt[to_cpt[b]] = static_cast<int16_t>(b);
    }
  }
  static std::string to_utf8_str(uint32_t cpt) {
    std::string s;
    append_utf8(s, cpt);
    return s;
  }
};

const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}

}  // namespace

uint32_t byte_to_cpt(uint8_t byte) { return byte_tables().to_cpt[byte]; }

const std::string& byte_to_utf8(uint8_t byte) { return byte_tables().to_utf8[byte]; }

int cpt_to_byte(uint32_t cpt) {
  const auto& t = byte_tables();
  return cpt < t.from_cpt.size() ? t.from_cpt[cpt] : -1;
}

}  // namespace kvbench::unicode
