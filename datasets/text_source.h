// Plain text from files that Debian packages install (never downloaded at run
// time), and the cleaned prose, sentences and word lists the task generators
// draw from. The sources (scripts/setup.sh installs them):
//   gnu-standards        GNU Coding Standards + Information for Maintainers:
//                        ~60k words of modern expository English; the essay
//                        haystack (the role Paul Graham's essays play in RULER
//                        and the classic needle test).
//   debian-reference-en  the Debian Reference manual: ~90k words of prose and
//                        examples; the long-text perplexity source, kept apart
//                        from the haystack text.
//   wamerican            /usr/share/dict/american-english: key words.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

// Lines [first, last] (1-based, inclusive) of a text file, ".gz" decompressed;
// each line keeps its '\n'. last = 0 means to the end. Throws InputError
// naming the file when it is missing, unreadable or shorter than `first`.
std::string read_text_lines(const std::string& path, int64_t first = 1, int64_t last = 0);

namespace datasets {

inline constexpr const char* kGnuStandardsText = "/usr/share/doc/gnu-standards/standards.text.gz";
inline constexpr const char* kGnuMaintainText = "/usr/share/doc/gnu-standards/maintain.text.gz";
inline constexpr const char* kDebianReferenceText =
    "/usr/share/debian-reference/debian-reference.en.txt.gz";
inline constexpr const char* kWordList = "/usr/share/dict/american-english";

// RULER's "noise" haystack: this line repeated.
inline constexpr std::string_view kNoiseSentences[] = {"The grass is green.", "The sky is blue.",
                                                       "The sun is yellow.", "Here we go.",
                                                       "There and back again."};

// The prose paragraphs of a plain-text manual (Texinfo or DocBook text
// output): headings, menus, lists, code examples, cross references and lines
// full of markup are dropped; hyphenated line breaks are joined; each
// paragraph is one line of single-spaced sentences that end in . ? or !.
std::vector<std::string> prose_paragraphs(std::string_view raw);

// Sentences of one paragraph: split after . ? ! (and a closing quote or
// parenthesis) before a capital letter, never after common abbreviations
// ("e.g.", "Mr.") or initials. Concatenating them with single spaces gives
// the paragraph back.
std::vector<std::string> split_sentences(std::string_view paragraph);

struct Prose {
  std::vector<std::string> sentences;
  std::vector<uint8_t> starts_paragraph;  // [sentences.size()] 1 = first of its paragraph
};

// Cached after the first call (thread-safe); InputError naming the file when a
// package is missing.
const Prose& essay_prose();      // gnu-standards
const Prose& reference_prose();  // debian-reference-en
// Lower-case a-z words of 4 to 8 letters from wamerican, sorted.
const std::vector<std::string>& dictionary_words();

}  // namespace datasets
}  // namespace kvbench
