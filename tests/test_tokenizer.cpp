// Tokenizer tests: round trips and special-token handling on the built-in
// tiny vocabularies, vocabulary validation, pre-tokenizer splits, chat
// templates, speed, and agreement with llama.cpp's token ids (golden files
// produced by llama.cpp's llama-tokenize outside this repository).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/common/error.h"
#include "model/gguf/gguf.h"
#include "model/gguf/gguf_writer.h"
#include "model/testing/tiny_vocab.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/support/padded_vocab.h"

namespace kvbench {
namespace {

// A GGUF image in memory plus the objects reading it, kept together because
// GgufFile::from_memory needs the bytes to outlive the file object.
struct Loaded {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load(const GgufWriter& w, const std::string& name = "tiny.gguf") {
  Loaded l;
  l.bytes = w.to_bytes();
  l.file = GgufFile::from_memory(l.bytes.data(), l.bytes.size(), name);
  l.tok = Tokenizer::from_gguf(*l.file);
  return l;
}

GgufWriter tiny_writer(TinyVocabKind kind) {
  GgufWriter w;
  write_tiny_vocab(w, kind);
  return w;
}

const Tokenizer& tiny(TinyVocabKind kind) {
  static const Loaded bpe = load(tiny_writer(TinyVocabKind::Bpe));
  static const Loaded spm = load(tiny_writer(TinyVocabKind::Spm));
  return kind == TinyVocabKind::Bpe ? *bpe.tok : *spm.tok;
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

const std::vector<std::string>& round_trip_corpus() {
  static const std::vector<std::string> corpus = {
      "",
      "a",
      "Hello world",
      "The quick brown fox jumps over the lazy dog.",
      "Emoji: \xF0\x9F\x98\x80 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD "
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9"
      "\xE2\x80\x8D\xF0\x9F\x91\xA7 \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7",
      "CJK: "
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83"
      "\x88 "
      "\xE4\xB8\xAD\xE6\x96\x87 \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
      "combining: e\xCC\x81 a\xCC\x88 n\xCC\x83 \xCC\x81\xCC\x81 (bare marks)",
      "digits: 1234567890123456789012345678901234567890 3.14159 1,000,000",
      "spaces:  two   three    four\ttab\t\ttwo tabs\nnewline\n\n\nthree\r\nCRLF   ",
      "   leading and trailing   ",
      "\t\n \t\n",
      "contractions: I'm you're we'll they've she'd it's don't I'M YOU'RE 'tis rock'n'roll",
      "special text: <|im_start|>user\nhi<|im_end|> <|endoftext|> <s> </s> <unk> <|im_",
      "code: for (int i = 0; i < n; ++i) { s += a[i] * 2; }  // done",
      "unicode "
      "spaces:"
      "\xC2\xA0nbsp\xE3\x80\x80ideographic\xE2\x80\xA8ls\xE2\x80\xA9ps\xC2\x85nel\xE2\x80\x8Bzw",
      "Ünïcödé façade naïve café Привет мир \xCE\xA9\xCE\xB1 \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A",
      "symbols: $$$ %%% ^^^ &&& *** ((( ))) \xE2\x88\x91 \xE2\x88\x9E \xE2\x89\xA0 \xC2\xBD "
      "\xC2\xB2",
      "control: \x01\x02\x1f\x7f end",
      "rare: \xF0\xB1\x8D\x90 (CJK ext H) \xF0\x9F\xAB\xA8 (shaking face) \xEE\x80\x80 (private "
      "use)",
  };
  return corpus;
}

// --- round trips ------------------------------------------------------------

class TinyVocabTest : public ::testing::TestWithParam<TinyVocabKind> {};

TEST_P(TinyVocabTest, DecodeInvertsEncodeOnVariedText) {
  const Tokenizer& tok = tiny(GetParam());
  for (const std::string& s : round_trip_corpus()) {
    for (bool add_bos : {false, true}) {
      const auto ids = tok.encode(s, add_bos, /*parse_special=*/false);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok.n_vocab()) << s;
      EXPECT_EQ(tok.decode(ids), s) << "add_bos=" << add_bos;
    }
  }
  // A long mixed text: the corpus joined many times.
  std::string big;
  for (int i = 0; i < 20; ++i) {
    for (const auto& s : round_trip_corpus()) big += s + "\n";
  }
  EXPECT_EQ(tok.decode(tok.encode(big, true, false)), big);
}

TEST_P(TinyVocabTest, StreamedPiecesConcatenateToTheDecodedText) {
  const Tokenizer& tok = tiny(GetParam());
  const std::string s = "streamed \xF0\x9F\x98\x80 text with \xE6\x97\xA5\xE6\x9C\xAC bytes";
  const auto ids = tok.encode(s, false, false);
  std::string streamed;
  for (int32_t id : ids) streamed += tok.token_to_piece(id);
  // SPM pieces keep the leading space the encoder added; decode drops it.
  const std::string expected = GetParam() == TinyVocabKind::Spm ? " " + s : s;
  EXPECT_EQ(streamed, expected);
}

// encode_parts encodes its parts as one text: the same ids as encode() of
// the concatenation (specials parsed where asked), for every cut of it.
TEST_P(TinyVocabTest, PartsEncodeAsTheJoinedText) {
  const Tokenizer& tok = tiny(GetParam());
  const bool bpe = GetParam() == TinyVocabKind::Bpe;
  const std::string open = bpe ? "<|im_start|>" : "<s>";
  const std::string close = bpe ? "<|im_end|>" : "</s>";
  const std::string head = open + "user\n";
  const std::string tail = close + "\n" + open + "assistant\n";
  for (const std::string& body : round_trip_corpus()) {
    if (body.find('<') != std::string::npos) continue;  // spells specials: see below
    SCOPED_TRACE(body);
    const std::string whole = head + body + "\n\nWhy?" + tail + "Answer:";
    const auto want = tok.encode(whole, true, true);
    // Cut the body anywhere, even inside a UTF-8 sequence or a word.
    for (size_t cut = 0; cut <= body.size(); cut += 1 + body.size() / 7) {
      const std::string a = body.substr(0, cut), b = body.substr(cut);
      const std::vector<TextPart> parts = {{head, true},      {a, false},      {b, false},
                                           {"\n\n", false},   {"Why?", false}, {tail, true},
                                           {"Answer:", false}};
      std::vector<int64_t> starts;
      ASSERT_EQ(tok.encode_parts(parts, true, &starts), want) << "cut " << cut;
      ASSERT_EQ(starts.size(), want.size());
      EXPECT_TRUE(std::is_sorted(starts.begin(), starts.end()));
      EXPECT_EQ(starts.front(), 0);
      EXPECT_LE(starts.back(), static_cast<int64_t>(whole.size()));
    }
  }
  // Plain parts never become control tokens; template parts do.
  const std::vector<TextPart> parts = {{head, true}, {close + "x", false}, {tail, true}};
  const auto ids = tok.encode_parts(parts, false, nullptr);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);  // close_id: the tail's only
  EXPECT_EQ(
      tok.encode_parts(parts, false, nullptr),
      tok.encode_parts(std::vector<TextPart>{{head, true}, {close + "x", false}, {tail, true}},
                       false, nullptr));
}

// A special token that strips the whitespace after it (Phi-3's, by llama.cpp's
// rule) strips it across a part boundary too, as in the joined text.
TEST(Tokenizer, PartsHonourRstripAcrossTheBoundary) {
  for (auto kind : {TinyVocabKind::Bpe, TinyVocabKind::Spm}) {
    GgufWriter w = tiny_writer(kind);
    w.set_string("general.name", "phi-3 tiny");
    const Loaded l = load(w);
    const std::string open = kind == TinyVocabKind::Bpe ? "<|im_start|>" : "</s>";
    for (const std::string& rest :
         {std::string("   hello"), std::string(" \n x"), std::string("  ")}) {
      SCOPED_TRACE(rest);
      const std::vector<TextPart> parts = {
          {open, true}, {rest.substr(0, 1), false}, {rest.substr(1), false}};
      EXPECT_EQ(l.tok->encode_parts(parts, false, nullptr),
                l.tok->encode(open + rest, false, true));
    }
  }
}

// The starts are each token's first byte in the joined text: on valid text
// the tokens from i to j decode to the bytes from starts[i] to starts[j].
TEST_P(TinyVocabTest, StartsLocateEveryToken) {
  const Tokenizer& tok = tiny(GetParam());
  const bool bpe = GetParam() == TinyVocabKind::Bpe;
  const std::string open = bpe ? "<|im_start|>" : "<s>";
  for (const std::string& body : round_trip_corpus()) {
    if (body.find('<') != std::string::npos || body.empty()) continue;
    SCOPED_TRACE(body);
    const std::string head = open + "user\n";
    const std::vector<TextPart> parts = {{head, true}, {body, false}};
    std::vector<int64_t> starts;
    const auto ids = tok.encode_parts(parts, false, &starts);
    ASSERT_EQ(ids[0], 1);
    EXPECT_EQ(starts[0], 0);
    const int64_t n = static_cast<int64_t>(ids.size());
    starts.push_back(static_cast<int64_t>(head.size() + body.size()));
    const std::string joined = head + body;
    // SentencePiece's space added after the special is not in the text.
    for (int64_t i = 1; i < n; ++i) {
      std::string piece = tok.token_to_piece(ids[i]);
      if (!bpe && i == 1) piece.erase(0, 1);
      EXPECT_EQ(piece, joined.substr(starts[i], starts[i + 1] - starts[i])) << "token " << i;
    }
  }
  // Invalid UTF-8: starts stay in bounds and in order.
  const std::string bad = std::string("a\xFF\x80 \xC3 \xED\xA0\x80 \xF0\x9F", 13);
  std::vector<int64_t> starts;
  const std::vector<TextPart> parts = {{bad, false}, {bad, false}};
  tok.encode_parts(parts, true, &starts);
  EXPECT_TRUE(std::is_sorted(starts.begin(), starts.end()));
  EXPECT_LE(starts.back(), 26);
}

TEST_P(TinyVocabTest, SpecialTokenTextIsParsedOnlyWhenAsked) {
  const Tokenizer& tok = tiny(GetParam());
  const bool bpe = GetParam() == TinyVocabKind::Bpe;
  const std::string open = bpe ? "<|im_start|>" : "<s>";
  const std::string close = bpe ? "<|im_end|>" : "</s>";
  const int32_t open_id = 1, close_id = 2;  // both vocabularies put them there
  const std::string text = open + "user\nhello" + close + "\n";

  const auto parsed = tok.encode(text, false, true);
  EXPECT_EQ(std::count(parsed.begin(), parsed.end(), open_id), 1);
  EXPECT_EQ(std::count(parsed.begin(), parsed.end(), close_id), 1);
  EXPECT_EQ(parsed.front(), open_id);

  const auto plain = tok.encode(text, false, false);
  EXPECT_FALSE(contains(plain, open_id));
  EXPECT_FALSE(contains(plain, close_id));
  EXPECT_GT(plain.size(), parsed.size());
  EXPECT_EQ(tok.decode(plain), text);

  // Rendering: special tokens are text only when asked for. For SPM the
  // space the encoder puts after a special token is taken off again.
  EXPECT_EQ(tok.decode(parsed, /*render_special=*/true), text);
  EXPECT_EQ(tok.decode(parsed, false), "user\nhello\n");
  EXPECT_EQ(tok.token_to_piece(open_id, true), open);
  EXPECT_EQ(tok.token_to_piece(open_id, false), "");

  // Longest match first, partial spellings stay text, adjacent specials split.
  const auto two = tok.encode(open + close + open, false, true);
  EXPECT_EQ(two, (std::vector<int32_t>{open_id, close_id, open_id}));
  const auto partial = tok.encode(open.substr(0, open.size() - 1), false, true);
  EXPECT_FALSE(contains(partial, open_id));
}

TEST_P(TinyVocabTest, EndOfGenerationTokens) {
  const Tokenizer& tok = tiny(GetParam());
  EXPECT_TRUE(tok.is_end_of_generation(tok.eos()));
  EXPECT_FALSE(tok.is_end_of_generation(-1));
  EXPECT_FALSE(tok.is_end_of_generation(tok.n_vocab()));
  if (GetParam() == TinyVocabKind::Bpe) {
    EXPECT_TRUE(tok.is_end_of_generation(0));   // <|endoftext|>
    EXPECT_FALSE(tok.is_end_of_generation(1));  // <|im_start|>
    EXPECT_TRUE(tok.is_end_of_generation(2));   // <|im_end|>
  } else {
    EXPECT_FALSE(tok.is_end_of_generation(0));  // <unk>
    EXPECT_FALSE(tok.is_end_of_generation(1));  // <s>
    EXPECT_TRUE(tok.is_end_of_generation(2));   // </s>
  }
  for (int32_t id = 3; id < tok.n_vocab(); ++id) ASSERT_FALSE(tok.is_end_of_generation(id)) << id;
}

INSTANTIATE_TEST_SUITE_P(Kinds, TinyVocabTest,
                         ::testing::Values(TinyVocabKind::Bpe, TinyVocabKind::Spm),
                         [](const auto& info) {
                           return info.param == TinyVocabKind::Bpe ? "Bpe" : "Spm";
                         });

TEST(Tokenizer, TinyVocabMetadata) {
  const Tokenizer& bpe = tiny(TinyVocabKind::Bpe);
  EXPECT_EQ(bpe.model_name(), "gpt2");
  EXPECT_EQ(bpe.pre_name(), "smollm");
  EXPECT_EQ(bpe.n_vocab(), tiny_vocab_size(TinyVocabKind::Bpe));
  EXPECT_GT(bpe.n_vocab(), 259 + 200);  // specials + bytes + a few hundred merges
  EXPECT_LT(bpe.n_vocab(), 1000);
  EXPECT_EQ(bpe.bos(), 1);
  EXPECT_EQ(bpe.eos(), 2);

  const Tokenizer& spm = tiny(TinyVocabKind::Spm);
  EXPECT_EQ(spm.model_name(), "llama");
  EXPECT_EQ(spm.n_vocab(), tiny_vocab_size(TinyVocabKind::Spm));
  EXPECT_LT(spm.n_vocab(), 1000);
  EXPECT_EQ(spm.bos(), 1);
  EXPECT_EQ(spm.eos(), 2);
  // Byte tokens <0x00>..<0xFF> are ids 3..258 and decode to their byte.
  EXPECT_EQ(spm.token_to_piece(3 + 0x41), "A");
  EXPECT_EQ(spm.token_to_piece(3 + 0xE6), std::string(1, '\xE6'));
}

TEST(Tokenizer, PaddedSpmVocabIsTheTinyOneGrownToTheExactSize) {
  const int32_t tiny_n = tiny_vocab_size(TinyVocabKind::Spm);
  GgufWriter w;
  write_padded_spm_vocab(w, 128256);  // Llama 3's vocabulary size
  const Loaded l = load(w, "padded.gguf");
  const Tokenizer& padded = *l.tok;
  EXPECT_EQ(padded.n_vocab(), 128256);
  EXPECT_EQ(padded.model_name(), "llama");
  EXPECT_EQ(padded.bos(), 1);
  EXPECT_EQ(padded.eos(), 2);
  // Every piece distinct (llama.cpp asserts it), the tiny pieces first and
  // unchanged, then U+2581 "filler<N>" pieces scored below all of them.
  const auto pieces = l.file->get_string_array("tokenizer.ggml.tokens");
  const auto scores = l.file->get_f32_array("tokenizer.ggml.scores");
  const auto types = l.file->get_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(pieces.size(), 128256u);
  ASSERT_EQ(scores.size(), 128256u);
  ASSERT_EQ(types.size(), 128256u);
  test::expect_padded_spm_pieces(pieces, static_cast<size_t>(tiny_n), 128256);
  const Tokenizer& spm = tiny(TinyVocabKind::Spm);
  for (int32_t id = 0; id < tiny_n; ++id)
    ASSERT_EQ(padded.token_to_piece(id, true), spm.token_to_piece(id, true));
  const float lowest_tiny = *std::min_element(scores.begin(), scores.begin() + tiny_n);
  EXPECT_LT(scores[tiny_n], lowest_tiny);
  EXPECT_TRUE(std::is_sorted(scores.begin() + tiny_n, scores.end(), std::greater<float>()));
  EXPECT_TRUE(std::all_of(types.begin() + tiny_n, types.end(), [](int32_t t) { return t == 1; }));
  // Text encodes as with the tiny vocabulary, and decodes back.
  const std::string text = "The quick brown fox\n\tjumps over 12 lazy dogs. \xE6\x97\xA5";
  EXPECT_EQ(padded.encode(text, true, false), spm.encode(text, true, false));
  EXPECT_EQ(padded.decode(padded.encode(text, false, false)), text);

  // At exactly the tiny size it is the tiny vocabulary; below, an error.
  GgufWriter same, tiny_w;
  write_padded_spm_vocab(same, tiny_n);
  write_tiny_vocab(tiny_w, TinyVocabKind::Spm);
  EXPECT_EQ(same.to_bytes(), tiny_w.to_bytes());
  GgufWriter small;
  EXPECT_THROW(write_padded_spm_vocab(small, tiny_n - 1), std::invalid_argument);
}

TEST(Tokenizer, AddBosFollowsTheVocabulary) {
  const Tokenizer& spm = tiny(TinyVocabKind::Spm);  // add_bos_token = true
  EXPECT_EQ(spm.encode("hi", true, false).front(), 1);
  EXPECT_NE(spm.encode("hi", false, false).front(), 1);
  EXPECT_EQ(spm.encode("", true, false), std::vector<int32_t>{1});
  EXPECT_TRUE(spm.encode("", false, false).empty());
  // Leading space handling: "hi" and " hi" differ (SentencePiece's prefix).
  EXPECT_NE(spm.encode("hi", false, false), spm.encode(" hi", false, false));
  EXPECT_EQ(spm.decode(spm.encode(" hi", true, false)), " hi");

  const Tokenizer& bpe = tiny(TinyVocabKind::Bpe);  // add_bos_token = false
  EXPECT_EQ(bpe.encode("hi", true, false), bpe.encode("hi", false, false));
  EXPECT_TRUE(bpe.encode("", true, true).empty());
}

TEST(Tokenizer, SpmBytesFallBackForUnknownCharacters) {
  const Tokenizer& spm = tiny(TinyVocabKind::Spm);
  // U+65E5 is not a piece: its three UTF-8 bytes become <0xE6><0x97><0xA5>.
  const auto ids = spm.encode("\xE6\x97\xA5", false, false);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(ids.end() - 3, ids.end()),
            (std::vector<int32_t>{3 + 0xE6, 3 + 0x97, 3 + 0xA5}));
}

TEST(Tokenizer, InvalidUtf8IsEncodedWithoutCrashing) {
  for (auto kind : {TinyVocabKind::Bpe, TinyVocabKind::Spm}) {
    const Tokenizer& tok = tiny(kind);
    const std::string bad = std::string("a\xFF\x80 \xC3 \xED\xA0\x80 \xF0\x9F", 13);
    // No round trip here: like llama.cpp, byte-level BPE replaces each bad
    // byte by U+FFFD and SPM splits symbols by the (bogus) lead-byte length.
    const auto ids = tok.encode(bad, true, true);
    EXPECT_FALSE(ids.empty());
    for (int32_t id : ids) EXPECT_TRUE(id >= 0 && id < tok.n_vocab());
  }
  // A valid text that merely looks odd does round-trip...
  const std::string odd = "\xEF\xBF\xBD \xF4\x8F\xBF\xBF \xEF\xBB\xBF";  // U+FFFD, U+10FFFF, BOM
  for (auto kind : {TinyVocabKind::Bpe, TinyVocabKind::Spm}) {
    EXPECT_EQ(tiny(kind).decode(tiny(kind).encode(odd, true, false)), odd);
  }
  // ...except U+2581 under SentencePiece, which is its spelling of a space
  // (the same in llama.cpp and sentencepiece itself).
  const std::string marker =
      "a\xE2\x96\x81"
      "b";
  EXPECT_EQ(tiny(TinyVocabKind::Bpe).decode(tiny(TinyVocabKind::Bpe).encode(marker, false, false)),
            marker);
  EXPECT_EQ(tiny(TinyVocabKind::Spm).decode(tiny(TinyVocabKind::Spm).encode(marker, false, false)),
            "a b");
}

// --- fingerprint --------------------------------------------------------------

TEST(Tokenizer, FingerprintIsStableAndSensitive) {
  const std::string bpe = tiny(TinyVocabKind::Bpe).fingerprint();
  EXPECT_EQ(bpe.size(), 16u);
  EXPECT_EQ(bpe.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(load(tiny_writer(TinyVocabKind::Bpe)).tok->fingerprint(), bpe);
  EXPECT_NE(tiny(TinyVocabKind::Spm).fingerprint(), bpe);

  {  // one merge fewer
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    auto f = load(w);
    std::vector<std::string> merges;
    for (auto m : f.file->get_string_array("tokenizer.ggml.merges")) merges.emplace_back(m);
    merges.pop_back();
    w.set_string_array("tokenizer.ggml.merges", merges);
    EXPECT_NE(load(w).tok->fingerprint(), bpe);
  }
  {  // a flag
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    EXPECT_NE(load(w).tok->fingerprint(), bpe);
  }
  {  // the pre-tokenizer
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_string("tokenizer.ggml.pre", "gpt-2");
    EXPECT_NE(load(w).tok->fingerprint(), bpe);
  }
  {  // one score
    GgufWriter w = tiny_writer(TinyVocabKind::Spm);
    auto f = load(w);
    auto scores = f.file->get_f32_array("tokenizer.ggml.scores");
    scores.back() += 1.0f;
    w.set_f32_array("tokenizer.ggml.scores", scores);
    EXPECT_NE(load(w).tok->fingerprint(), tiny(TinyVocabKind::Spm).fingerprint());
  }
}

// --- validation -----------------------------------------------------------

void expect_vocab_error(GgufWriter w, const std::string& needle) {
  try {
    load(w, "bad.gguf");
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("bad.gguf: ", 0), 0u) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

std::vector<std::string> tiny_tokens(TinyVocabKind kind) {
  auto f = load(tiny_writer(kind));
  std::vector<std::string> out;
  for (auto t : f.file->get_string_array("tokenizer.ggml.tokens")) out.emplace_back(t);
  return out;
}

TEST(Tokenizer, InvalidVocabulariesAreReportedWithThePath) {
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1});
    expect_vocab_error(w, "token_type");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Spm);
    w.set_f32_array("tokenizer.ggml.scores", {0.0f});
    expect_vocab_error(w, "scores");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_u32("tokenizer.ggml.eos_token_id", 100000);
    expect_vocab_error(w, "eos_token_id");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_string_array("tokenizer.ggml.merges", {"a b", "nospace"});
    expect_vocab_error(w, "merge 1");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_string_array("tokenizer.ggml.merges", {"a "});
    expect_vocab_error(w, "merge 0");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_string("tokenizer.ggml.pre", "no-such-pre");
    expect_vocab_error(w, "no-such-pre");
    expect_vocab_error(w, "smollm");  // the message lists the supported names
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_string("tokenizer.ggml.model", "bert");
    expect_vocab_error(w, "bert");
  }
  {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    expect_vocab_error(w, "tokenizer.ggml.tokens");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
    w.set_string("tokenizer.ggml.model", "gpt2");
    auto tokens = tiny_tokens(TinyVocabKind::Bpe);
    tokens[5] = tokens[6];
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    expect_vocab_error(w, "same text");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Spm);
    auto tokens = tiny_tokens(TinyVocabKind::Spm);
    tokens[3] = "<0xZZ>";
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    expect_vocab_error(w, "byte token 3");
  }
  {
    GgufWriter w = tiny_writer(TinyVocabKind::Spm);
    std::vector<int32_t> types(tiny_vocab_size(TinyVocabKind::Spm), 1);
    types[7] = 42;
    w.set_i32_array("tokenizer.ggml.token_type", types);
    expect_vocab_error(w, "invalid type 42");
  }
}

// --- pre-tokenizers -----------------------------------------------------------
// Expected chunks were worked out from the regexes and checked against
// llama.cpp's unicode_regex_split.

using Chunks = std::vector<std::string>;

Chunks split(const char* pre, const std::string& text) {
  auto p = PreTokenizer::create(pre);
  if (!p) throw std::runtime_error(std::string("no pre-tokenizer ") + pre);
  return p->split(text);
}

TEST(PreTokenizer, SmolLMIsolatesEveryDigit) {
  EXPECT_EQ(split("smollm", "Hello world"), (Chunks{"Hello", " world"}));
  EXPECT_EQ(split("smollm", "1234567"), (Chunks{"1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(split("smollm", "abc12345def"), (Chunks{"abc", "1", "2", "3", "4", "5", "def"}));
  EXPECT_EQ(split("smollm", "x=$5.00!! (ok)"),
            (Chunks{"x", "=$", "5", ".", "0", "0", "!!", " (", "ok", ")"}));
  EXPECT_EQ(split("smollm", "12 345,678.90"),
            (Chunks{"1", "2", " ", "3", "4", "5", ",", "6", "7", "8", ".", "9", "0"}));
  EXPECT_EQ(
      split("smollm", "I'm can't we'll they've you'd it's"),
      (Chunks{"I", "'m", " can", "'t", " we", "'ll", " they", "'ve", " you", "'d", " it", "'s"}));
  EXPECT_EQ(split("smollm", "THEY'RE HERE"), (Chunks{"THEY", "'", "RE", " HERE"}));
  EXPECT_EQ(split("smollm", "a   b"), (Chunks{"a", "  ", " b"}));
  EXPECT_EQ(split("smollm", "hello\n\n  world"), (Chunks{"hello", "\n\n ", " world"}));
  EXPECT_EQ(split("smollm", "end   "), (Chunks{"end", "   "}));
  EXPECT_EQ(split("smollm", "tab\tx\t\ty"), (Chunks{"tab", "\t", "x", "\t", "\t", "y"}));
  EXPECT_EQ(split("smollm", "  lead"), (Chunks{" ", " lead"}));
  EXPECT_EQ(split("smollm", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E text"),
            (Chunks{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", " text"}));
  EXPECT_TRUE(split("smollm", "").empty());
}

TEST(PreTokenizer, Gpt2KeepsDigitRunsTogether) {
  EXPECT_EQ(split("gpt-2", "1234567"), (Chunks{"1234567"}));
  EXPECT_EQ(split("gpt-2", "abc12345def"), (Chunks{"abc", "12345", "def"}));
  EXPECT_EQ(split("gpt-2", "12 345,678.90"), (Chunks{"12", " 345", ",", "678", ".", "90"}));
  EXPECT_EQ(split("gpt-2", "x=$5.00!! (ok)"),
            (Chunks{"x", "=$", "5", ".", "00", "!!", " (", "ok", ")"}));
  EXPECT_EQ(split("gpt-2", "THEY'RE HERE"), (Chunks{"THEY", "'", "RE", " HERE"}));
  EXPECT_EQ(split("gpt-2", "hello\n\n  world"), (Chunks{"hello", "\n\n ", " world"}));
  EXPECT_EQ(split("gpt2", "a   b"), (Chunks{"a", "  ", " b"}));  // alias
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndFoldsContractionCase) {
  EXPECT_EQ(split("llama3", "1234567"), (Chunks{"123", "456", "7"}));
  EXPECT_EQ(split("llama-bpe", "abc12345def"), (Chunks{"abc", "123", "45", "def"}));
  EXPECT_EQ(split("llama3", "12 345,678.90"), (Chunks{"12", " ", "345", ",", "678", ".", "90"}));
  EXPECT_EQ(split("llama3", "THEY'RE HERE"), (Chunks{"THEY", "'RE", " HERE"}));
  EXPECT_EQ(split("llama3", "I'm can't we'll"), (Chunks{"I", "'m", " can", "'t", " we", "'ll"}));
  EXPECT_EQ(split("llama3", "hello\n\n  world"), (Chunks{"hello", "\n\n", " ", " world"}));
  EXPECT_EQ(split("llama3", "tab\tx\t\ty"), (Chunks{"tab", "\tx", "\t", "\ty"}));
  EXPECT_EQ(split("llama3", "\"quoted\""), (Chunks{"\"quoted", "\""}));
  EXPECT_EQ(split("llama3", "a   b"), (Chunks{"a", "  ", " b"}));
  EXPECT_EQ(split("llama3", "end   "), (Chunks{"end", "   "}));
}

TEST(PreTokenizer, ChunksCoverTheInput) {
  for (const auto& name : PreTokenizer::supported_names()) {
    auto p = PreTokenizer::create(name);
    ASSERT_TRUE(p) << name;
    for (const std::string& s : round_trip_corpus()) {
      std::string joined;
      for (const auto& c : p->split(s)) {
        EXPECT_FALSE(c.empty()) << name;
        joined += c;
      }
      EXPECT_EQ(joined, s) << name;
    }
  }
  EXPECT_EQ(PreTokenizer::create("no-such-pre"), nullptr);
}

// --- chat templates -------------------------------------------------------------

TEST(ChatTemplate, SmolLM2ChatMLWithDefaultSystemPrompt) {
  GgufWriter w = tiny_writer(TinyVocabKind::Bpe);
  auto l = load(w);
  const ChatTemplate t = ChatTemplate::from_gguf(*l.file);
  EXPECT_EQ(t.kind(), ChatTemplate::Kind::ChatML);
  EXPECT_EQ(t.name(), "chatml");
  EXPECT_EQ(t.apply({{"user", "Hi!"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.apply({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n");
  EXPECT_EQ(t.apply({}, true), "<|im_start|>assistant\n");
  // The rendered text tokenizes into the control tokens.
  const auto ids = l.tok->encode(t.apply({{"user", "Hi!"}}, true), false, true);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 2);
}

TEST(ChatTemplate, RecognisesTheCommonFormats) {
  const auto from = [](const std::string& tmpl) {
    GgufWriter w = tiny_writer(TinyVocabKind::Spm);
    w.set_string("tokenizer.chat_template", tmpl);
    auto l = load(w);
    return ChatTemplate::from_gguf(*l.file);
  };
  const std::vector<ChatMessage> conv = {
      {"system", "S"}, {"user", " U1 "}, {"assistant", "A1"}, {"user", "U2"}};

  const auto llama3 =
      from("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}");
  EXPECT_EQ(llama3.kind(), ChatTemplate::Kind::Llama3);
  EXPECT_EQ(llama3.apply(conv, true),
            "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nU1<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nA1<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nU2<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");

  const auto llama2 = from("{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }} <<SYS>>");
  EXPECT_EQ(llama2.kind(), ChatTemplate::Kind::Llama2);
  EXPECT_EQ(llama2.apply(conv, true),
            "[INST] <<SYS>>\nS\n<</SYS>>\n\n U1 [/INST] A1 </s><s>[INST] U2 [/INST]");

  const auto zephyr = from("{{ '<|user|>\\n' + message['content'] + eos_token }}");
  EXPECT_EQ(zephyr.kind(), ChatTemplate::Kind::Zephyr);
  EXPECT_EQ(zephyr.apply({{"user", "Hi"}}, true), "<|user|>\nHi</s>\n<|assistant|>\n");
  // The tiny SPM vocabulary carries TinyLlama's Zephyr template.
  {
    auto l = load(tiny_writer(TinyVocabKind::Spm));
    EXPECT_EQ(ChatTemplate::from_gguf(*l.file).kind(), ChatTemplate::Kind::Zephyr);
  }

  const auto gemma = from(
      "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}");
  EXPECT_EQ(gemma.kind(), ChatTemplate::Kind::Gemma);
  EXPECT_EQ(gemma.apply(conv, true),
            "<start_of_turn>user\nS\n\nU1<end_of_turn>\n<start_of_turn>model\nA1<end_of_turn>\n"
            "<start_of_turn>user\nU2<end_of_turn>\n<start_of_turn>model\n");

  const auto phi3 =
      from("{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n' + '<|assistant|>' }}");
  EXPECT_EQ(phi3.kind(), ChatTemplate::Kind::Phi3);
  EXPECT_EQ(phi3.apply({{"user", "Hi"}}, true), "<|user|>\nHi<|end|>\n<|assistant|>\n");

  // Qwen-style: the default system prompt is the constant literal, not the
  // branch that prints the user's own system message.
  const auto qwen = from(
      "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + "
      "messages[0]['content'] + "
      "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}{%- "
      "endif %}");
  EXPECT_EQ(qwen.apply({{"user", "Hi"}}, false),
            "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");

  try {
    from("{{ messages }}");
    ADD_FAILURE() << "unrecognised template accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tiny.gguf"), std::string::npos) << e.what();
  }
  {
    GgufWriter bare;
    bare.set_string("general.architecture", "llama");
    auto bytes = bare.to_bytes();
    auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "bare.gguf");
    EXPECT_EQ(ChatTemplate::from_gguf(*f).kind(), ChatTemplate::Kind::ChatML);
  }
  EXPECT_EQ(ChatTemplate::of_kind(ChatTemplate::Kind::ChatML, "D").apply({{"user", "x"}}, false),
            "<|im_start|>system\nD<|im_end|>\n<|im_start|>user\nx<|im_end|>\n");
}

// --- speed ------------------------------------------------------------------------

TEST(Tokenizer, EncodesTenThousandTokensQuickly) {
  std::string text;
  for (int i = 0; text.size() < 40000; ++i)
    text += round_trip_corpus()[i % round_trip_corpus().size()] + " ";
  for (auto kind : {TinyVocabKind::Bpe, TinyVocabKind::Spm}) {
    const Tokenizer& tok = tiny(kind);
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = tok.encode(text, true, true);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(ids.size(), 10000u);
    EXPECT_LT(s, 1.0) << ids.size() << " tokens";
  }
  // Degenerate inputs (one 100k-character word, a 100k whitespace run) stay
  // O(n log n) rather than quadratic.
  for (const std::string& s : {std::string(100000, 'a'), std::string(100000, ' ')}) {
    for (auto kind : {TinyVocabKind::Bpe, TinyVocabKind::Spm}) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto ids = tiny(kind).encode(s, false, false);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(secs, 2.0);
      EXPECT_EQ(tiny(kind).decode(ids), s);
    }
  }
}

// --- agreement with llama.cpp -------------------------------------------------

nlohmann::json read_golden(const std::string& name) {
  std::ifstream in(std::string(KVBENCH_TEST_DATA) + "/" + name);
  if (!in) throw std::runtime_error("cannot open " + name);
  return nlohmann::json::parse(in);
}

void expect_golden(const Tokenizer& tok, const nlohmann::json& golden) {
  ASSERT_GE(golden["cases"].size(), 25u);
  int checked = 0;
  for (const auto& c : golden["cases"]) {
    const auto text = c["text"].get<std::string>();
    EXPECT_EQ(tok.encode(text, true, true), c["parse_special"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(tok.encode(text, true, false), c["no_parse_special"].get<std::vector<int32_t>>())
        << text;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(golden["cases"].size()));
}

TEST(GoldenTokens, TinyVocabulariesMatchLlamaCpp) {
  for (auto [kind, file] : {std::pair{TinyVocabKind::Bpe, "golden_tokens_tiny_bpe.json"},
                            std::pair{TinyVocabKind::Spm, "golden_tokens_tiny_spm.json"}}) {
    const auto golden = read_golden(file);
    const Tokenizer& tok = tiny(kind);
    // The ids belong to one exact vocabulary: a deliberate change of the
    // built-in vocabularies needs new figures from llama.cpp.
    ASSERT_EQ(tok.fingerprint(), golden["vocab_fingerprint"].get<std::string>())
        << "the tiny vocabulary changed; regenerate " << file << " with llama.cpp's llama-tokenize";
    expect_golden(tok, golden);
  }
}

std::string smollm2_path() {
  if (const char* env = std::getenv("KVBENCH_MODEL"); env && *env) return env;
  const auto p = std::filesystem::path(KVBENCH_TEST_DATA) / ".." / ".." / "models" /
                 "SmolLM2-135M-Instruct.Q4_1.gguf";
  return std::filesystem::exists(p) ? p.string() : std::string();
}

TEST(GoldenTokens, SmolLM2MatchesLlamaCpp) {
  const std::string path = smollm2_path();
  if (path.empty()) {
    GTEST_SKIP()
        << "SmolLM2-135M-Instruct.Q4_1.gguf not found (set KVBENCH_MODEL or put it in models/)";
  }
  auto file = GgufFile::open(path);
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_EQ(tok->pre_name(), "smollm");
  const auto golden = read_golden("golden_tokens_smollm2.json");
  ASSERT_EQ(tok->fingerprint(), golden["vocab_fingerprint"].get<std::string>())
      << "a different SmolLM2 file";
  expect_golden(*tok, golden);
  EXPECT_TRUE(tok->is_end_of_generation(2));   // <|im_end|>
  EXPECT_TRUE(tok->is_end_of_generation(0));   // <|endoftext|>
  EXPECT_FALSE(tok->is_end_of_generation(1));  // <|im_start|>
  EXPECT_EQ(ChatTemplate::from_gguf(*file).apply({{"user", "Hi"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");

  // ~10k tokens of real text in well under a second.
  std::string text;
  for (const auto& c : golden["cases"]) text += c["text"].get<std::string>() + "\n";
  std::string big;
  while (big.size() < 50000) big += text;
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(big, true, false);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(ids.size(), 10000u);
  EXPECT_LT(secs, 1.0);
  EXPECT_EQ(tok->decode(ids), big);
}

}  // namespace
}  // namespace kvbench
