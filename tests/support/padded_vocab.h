// Checks of a SentencePiece vocabulary padded to a model's size
// (write_padded_spm_vocab): what the tokenizer and shaped-model tests both
// read back from the written file.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench::test {

// `pieces` (n_vocab of them): all distinct, byte tokens <0x00>..<0xFF> at
// 3..258, and U+2581 "filler<N>" pieces from index first_filler to the last.
inline void expect_padded_spm_pieces(const std::vector<std::string_view>& pieces,
                                     size_t first_filler, size_t n_vocab) {
  EXPECT_EQ(std::set<std::string_view>(pieces.begin(), pieces.end()).size(), pieces.size());
  EXPECT_EQ(pieces[3], "<0x00>");
  EXPECT_EQ(pieces[258], "<0xFF>");
  EXPECT_EQ(pieces[first_filler],
            "\xE2\x96\x81"
            "filler0");
  EXPECT_EQ(pieces.back(),
            "\xE2\x96\x81"
            "filler" +
                std::to_string(n_vocab - 1 - first_filler));
}

}  // namespace kvbench::test
