// UTF-8 helpers and the GPT-2 byte <-> unicode mapping used by the tokenizer.
// The UTF-8 decoder is deliberately lenient in the same way as llama.cpp's, so
// that byte-level BPE sees the same code points llama.cpp does for any input,
// including invalid UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench::unicode {

constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces, from its high nibble
// (continuation bytes and 0xF8..0xFF count as 1). This is how SentencePiece-
// style tokenization splits text into initial symbols.
size_t utf8_len_from_lead(unsigned char lead);

// Decodes one code point at `offset` and advances it. Lenient like llama.cpp:
// overlong forms and surrogates are decoded arithmetically, while a stray
// continuation byte, a truncated sequence or a bad lead byte yields U+FFFD and
// consumes one byte. Values above U+10FFFF (possible from F4..F7 leads) are
// treated as invalid too.
uint32_t decode_one(std::string_view text, size_t& offset);
std::vector<uint32_t> decode(std::string_view text);

// Appends the UTF-8 encoding of `cpt` (<= 0x10FFFF; surrogates are encoded
// arithmetically as 3 bytes, mirroring decode_one).
void append_utf8(std::string& out, uint32_t cpt);
std::string to_utf8(uint32_t cpt);

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or
// truncated sequences).
bool is_valid_utf8(std::string_view text);

// GPT-2's reversible byte -> printable code point table: printable Latin-1
// bytes map to themselves, the other 68 bytes to U+0100.. in byte order.
uint32_t byte_to_cpt(uint8_t byte);
// UTF-8 of byte_to_cpt(byte).
const std::string& byte_to_utf8(uint8_t byte);
// Inverse of byte_to_cpt; -1 for code points outside the table.
int cpt_to_byte(uint32_t cpt);

}  // namespace kvbench::unicode
